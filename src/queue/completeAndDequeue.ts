/**
 * Complete and claim next: a consumer that has finished some tasks reports them and claims its
 * next batch in ONE transaction (one round trip, one commit), instead of a Complete and a claim of
 * their own. The Priority Dequeue Trigger does this with Settle Tasks "When the Execution
 * Finishes" (a finished execution's tasks ride on the claim of the next one); the two statements
 * and their answers are exactly complete()'s and dequeue()'s.
 */
import { claimStatement, dequeue, toClaimedTask, type ClaimedTask, type DequeueOptions } from './dequeue';
import { complete, completeResults, completeStatement, type CompleteInput, type CompleteResult } from './complete';
import type { LedgerSchema, Queryable } from './types';
import { boundedQueries, isLostConnection, OutcomeUnknownError, type Bounds } from '../db/bounds';
import { ReplicationUnconfirmedError } from '../db/syncRep';
import { InputError } from '../errors';

export interface CompleteAndDequeueResult {
	/** One result per item of `completions`, in input order (as complete() answers); empty with completeError. */
	completed: CompleteResult[];
	/** The tasks claimed, in claim order (as dequeue() answers; possibly none). */
	tasks: ClaimedTask[];
	/**
	 * Set when the completions were not recorded: the one transaction failed with an error the
	 * server answered (nothing of it was recorded), and the completions sent alone failed with this
	 * error (their leases decide). The claim was still sent alone after them.
	 */
	completeError?: Error;
	/**
	 * Set when nothing was claimed because of an error: the one transaction failed with an error the
	 * server answered, and the claim sent alone (after the completions alone) failed with this error.
	 */
	claimError?: Error;
}

/**
 * Completes `completions` (complete()'s items: id, lease token, optional result) and claims up to
 * `options.limit` tasks (dequeue()'s options) in one bounded transaction: `BEGIN; SET LOCAL
 * statement_timeout / lock_timeout; SELECT * FROM queue_complete(…); SELECT * FROM queue_claim(…);
 * COMMIT` (src/db/bounds.ts boundedQueries). The Complete runs first, so the claim never sees the
 * finished tasks as processing. Without completions it is dequeue() (its errors thrown as they are).
 *
 * Errors: InputError for a malformed completion or bad options (before anything is sent). When the
 * transaction fails with an error the server answered (a bound that fired, any other SQLSTATE),
 * nothing of it was recorded: the completions are sent alone (complete()), then the claim alone
 * (dequeue()), and an error of either is returned as `completeError` / `claimError` instead of
 * thrown, so one half's failure neither hides nor blocks the other (a lock wait may then be paid
 * twice: the transaction's, then the lone call's, each at most Lock Timeout). A lost connection
 * (DeadlineError, OutcomeUnknownError, ReplicationUnconfirmedError, a reset) is thrown as it is:
 * either half may have been recorded; sending the completions again is safe (they answer
 * already_settled), and tasks a lost claim took come back when their lease ends.
 */
export async function completeAndDequeue(
	db: Queryable,
	schema: LedgerSchema,
	completions: CompleteInput[],
	options: DequeueOptions,
	bounds?: Bounds,
): Promise<CompleteAndDequeueResult> {
	const claim = claimStatement(schema, options);
	if (completions.length === 0) return { completed: [], tasks: await dequeue(db, schema, options, bounds) };
	const settle = completeStatement(schema, completions);
	let rows: unknown[][];
	try {
		rows = await boundedQueries(db, [settle, claim], bounds, { repeatSafe: true });
	} catch (e) {
		if (!answered(e)) throw e;
		// Rolled back, nothing recorded: the completions alone, then the claim alone.
		const out: CompleteAndDequeueResult = { completed: [], tasks: [] };
		try {
			out.completed = await complete(db, schema, completions, bounds);
		} catch (completeError) {
			if (!answered(completeError)) throw completeError;
			out.completeError = completeError as Error;
		}
		try {
			out.tasks = await dequeue(db, schema, options, bounds);
		} catch (claimError) {
			if (!answered(claimError)) throw claimError;
			out.claimError = claimError as Error;
		}
		return out;
	}
	return { completed: completeResults(rows[0], completions.length), tasks: (rows[1] as Parameters<typeof toClaimedTask>[0][]).map(toClaimedTask) };
}

/** The server answered the call with an error (so its transaction recorded nothing); not bad input, not a lost connection. */
function answered(e: unknown): boolean {
	return !(e instanceof InputError || e instanceof OutcomeUnknownError || e instanceof ReplicationUnconfirmedError || isLostConnection(e));
}
