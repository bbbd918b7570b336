/**
 * Fail: the holder of a live lease reports a failure; the task is retried after a capped
 * exponential backoff with jitter (or a fixed delay, item by item), or goes dead (dead letter) at its maximum attempts.
 */
import { LIMITS } from '../limits';
import { markPrepared, prepareOnce } from './prepared';
import { baseResult, checkSettleTarget, inInputOrder, settleKey, type SettleResult, type SettleTarget, type SettleRow } from './settle';
import { checkSeconds, fn, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { storableText } from '../text';
import { InputError } from '../errors';

export interface FailInput extends SettleTarget {
	/**
	 * The error to record as last_error: cut to 10,000 UTF-16 units on a code-point boundary, NUL
	 * characters and lone surrogates replaced by U+FFFD (src/text.ts storableText), so a message
	 * Postgres could not store never fails the batch.
	 */
	error: string;
	/** True: go dead now without further retries. */
	giveUp?: boolean;
	/**
	 * How a retry waits: 'exponential' (default: the batch's capped exponential backoff with jitter,
	 * BackoffOptions) or 'fixed' (exactly fixedDelaySeconds, no jitter).
	 */
	retryDelay?: RetryDelay;
	/**
	 * With retryDelay 'fixed': the delay, seconds (LIMITS.fixedDelaySeconds: 0 to 31,536,000, fractions allowed; default 60).
	 * Ignored with 'exponential'; the prepared input carries it only when fixed.
	 */
	fixedDelaySeconds?: number;
}

/** The ways a retry waits (FailInput.retryDelay). */
export const RETRY_DELAYS = ['exponential', 'fixed'] as const;
export type RetryDelay = (typeof RETRY_DELAYS)[number];

export interface BackoffOptions {
	/** Backoff of the first retry before jitter, seconds (default 5). */
	baseSeconds?: number;
	/** Upper bound of the backoff before jitter, seconds (default 3600). */
	capSeconds?: number;
}

export interface FailResult extends SettleResult {
	attempts: number | null;
	maxAttempts: number | null;
	/** When the retry may be claimed (ISO-8601), for retry_scheduled. */
	retryAt: string | null;
	lastError: string | null;
}

interface Row extends SettleRow {
	attempts: number | null;
	max_attempts: number | null;
	retry_at: Date | null;
	last_error: string | null;
}

/**
 * Backoff before jitter for the given attempt (1-based), seconds: min(cap, base * 2^(attempt-1)).
 * The database adds "equal jitter": the retry waits backoff/2 + random * backoff/2 seconds.
 */
export function backoffSeconds(attempt: number, baseSeconds: number, capSeconds: number): number {
	return Math.min(capSeconds, baseSeconds * 2 ** Math.max(attempt - 1, 0));
}

/**
 * Checks one input (id, token, retry delay; a fixed delay in LIMITS.fixedDelaySeconds, 0 to 31,536,000 s); returns it normalised
 * (error text made storable and cut to 10,000 UTF-16 units, src/text.ts storableText; 'failed' when
 * empty) and prepared (prepared.ts). Throws InputError.
 */
export function prepareFailInput(it: FailInput): FailInput {
	const mode = it.retryDelay ?? 'exponential';
	if (!(RETRY_DELAYS as readonly unknown[]).includes(mode)) throw new InputError(`Retry delay must be one of ${RETRY_DELAYS.join(', ')}, got ${JSON.stringify(it.retryDelay)}`);
	const target = checkSettleTarget(it);
	const fixed = mode === 'fixed' ? checkSeconds(it.fixedDelaySeconds ?? LIMITS.fixedDelaySeconds.default, 'Fixed delay', LIMITS.fixedDelaySeconds) : undefined;
	return markPrepared({
		...target,
		error: storableText(String(it.error ?? 'failed'), MAX_ERROR_UNITS) || 'failed',
		giveUp: it.giveUp === true,
		retryDelay: mode,
		...(fixed === undefined ? {} : { fixedDelaySeconds: fixed }),
	});
}

/** Longest stored error text of a failure, in UTF-16 code units. */
export const MAX_ERROR_UNITS = 10_000;

/** Checks the backoff of a fail batch (LIMITS.backoffBaseSeconds: 0 to 86,400 s, LIMITS.backoffCapSeconds: 0 to 31,536,000 s); defaults filled in. Throws InputError. */
export function prepareBackoff(backoff: BackoffOptions): BackoffOptions {
	return markPrepared({
		baseSeconds: checkSeconds(backoff.baseSeconds ?? LIMITS.backoffBaseSeconds.default, 'Backoff base', LIMITS.backoffBaseSeconds),
		capSeconds: checkSeconds(backoff.capSeconds ?? LIMITS.backoffCapSeconds.default, 'Backoff cap', LIMITS.backoffCapSeconds),
	});
}

/**
 * Fails a batch in one statement. Outcomes per item: retry_scheduled (pending again at retryAt) |
 * dead (attempts used up or giveUp; happens once per task life, with this error as last_error) |
 * already_settled | lease_lost | not_found. Results in input order.
 * Throws InputError for a malformed id, token or backoff (before any write). `bounds`: as in complete().
 */
export async function fail(db: Queryable, schema: LedgerSchema, items: FailInput[], backoff: BackoffOptions = {}, bounds?: Bounds): Promise<FailResult[]> {
	const { baseSeconds: base, capSeconds: cap } = prepareOnce(backoff, prepareBackoff);
	if (items.length === 0) return [];
	const payload = items.map((it) => prepareOnce(it, prepareFailInput)).map((it, i) => ({ i, ...settleKey(it), err: it.error, giveUp: it.giveUp, delay: it.fixedDelaySeconds }));
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_fail')}($1::jsonb, $2, $3)`, [JSON.stringify(payload), base, cap], bounds, {
		// Failing again with the same lease token answers already_settled or lease_lost.
		repeatSafe: true,
	});
	return inInputOrder(
		rows.map((r) => ({
			...baseResult(r),
			attempts: r.attempts,
			maxAttempts: r.max_attempts,
			retryAt: iso(r.retry_at),
			lastError: r.last_error,
		})),
		items.length,
	);
}
