/**
 * Complete: the holder of a live lease reports success; the task moves to the archive as succeeded.
 */
import { markPrepared, prepareOnce } from './prepared';
import { baseResult, checkSettleTarget, inInputOrder, settleKey, type SettleResult, type SettleTarget, type SettleRow } from './settle';
import { fn, iso, type Queryable, type LedgerSchema } from './types';
import { InputError } from '../errors';
import { assertJson, NotJsonError } from '../json/canonical';
import { boundedQuery, type Bounds } from '../db/bounds';

export interface CompleteInput extends SettleTarget {
	/** Optional JSON result kept with the archived task. */
	result?: unknown;
}

export interface CompleteResult extends SettleResult {
	attempts: number | null;
	/** When the task succeeded (ISO-8601), for completed and already_settled. */
	finishedAt: string | null;
}

interface Row extends SettleRow {
	attempts: number | null;
	finished_at: Date | null;
}

/**
 * Checks one input (id, token, and the result: plain JSON that Postgres can store, no NUL, no lone
 * surrogate: src/json/canonical.ts assertJson); returns it normalised and prepared (prepared.ts).
 * Throws InputError, so a result Postgres would refuse fails its own item, not the batch.
 */
export function prepareCompleteInput(it: CompleteInput): CompleteInput {
	const target = checkSettleTarget(it);
	if (it.result !== undefined) {
		try {
			assertJson(it.result);
		} catch (e) {
			if (e instanceof NotJsonError) throw new InputError(`The result is not plain JSON: ${e.message.replace(/^\$/, 'result')}`);
			throw e;
		}
	}
	return markPrepared({ ...target, result: it.result });
}

/**
 * Completes a batch in one statement (set-based: one DELETE … RETURNING into the archive for the
 * first item of every task id; only the items it did not complete are looked at one by one).
 * Outcomes per item: completed | already_settled (this token
 * already completed it) | lease_lost (expired or another holder: nothing changed) | not_found.
 * Results in input order. Throws InputError for a malformed id or token (before any write).
 * `bounds`: statement and lock timeouts of the call's transaction when `db` is a pool (src/db/bounds.ts;
 * default 30000 / 5000 ms); a bound that fires throws LedgerBusyError and nothing was changed.
 */
export async function complete(db: Queryable, schema: LedgerSchema, items: CompleteInput[], bounds?: Bounds): Promise<CompleteResult[]> {
	if (items.length === 0) return [];
	const st = completeStatement(schema, items);
	// Settling again with the same lease token answers already_settled or lease_lost.
	const rows = await boundedQuery<Row>(db, st.text, st.values, bounds, { repeatSafe: true });
	return completeResults(rows as unknown[], items.length);
}

/**
 * The Complete statement for `items` (checked and prepared: throws InputError as complete() does),
 * for complete() and for a Complete sent together with the next claim (completeAndDequeue.ts).
 */
export function completeStatement(schema: LedgerSchema, items: CompleteInput[]): { text: string; values: unknown[] } {
	const payload = items
		.map((it) => prepareOnce(it, prepareCompleteInput))
		.map((it, i) => ({ i, ...settleKey(it), res: it.result === undefined ? null : it.result }));
	return { text: `SELECT * FROM ${fn(schema, 'queue_complete')}($1::jsonb)`, values: [JSON.stringify(payload)] };
}

/** queue_complete's rows as results in input order (`count` = the number of items sent). */
export function completeResults(rows: unknown[], count: number): CompleteResult[] {
	return inInputOrder(
		(rows as Row[]).map((r) => ({ ...baseResult(r), attempts: r.attempts, finishedAt: iso(r.finished_at) })),
		count,
	);
}
