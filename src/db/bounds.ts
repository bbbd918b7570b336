/**
 * Every statement the ledger nodes send is bounded in time. Each batch runs as one transaction on a
 * client taken from the pool:
 *
 *   BEGIN; SET LOCAL statement_timeout = <ms>; SET LOCAL lock_timeout = <ms>;   (one round trip)
 *   SELECT * FROM <schema>.<function>(...)                                      (the batch)
 *   COMMIT
 *
 * - Waiting for a pool connection is bounded by the pool's connectionTimeoutMillis (credential
 *   "Connection Timeout (ms)", default DEFAULTS.connectTimeoutMs).
 * - A row lock held by another transaction is waited for at most lock_timeout per lock
 *   (credential "Lock Timeout (ms)"). The ledger functions catch that error per item (SQLSTATE
 *   55P03) and answer `busy` for that key alone; the other keys of the batch carry on.
 * - The whole batch statement is bounded by statement_timeout (credential "Statement Timeout (ms)");
 *   when it fires (57014) the transaction is rolled back and nothing of the batch was recorded.
 * - Serialization failures and deadlocks (40001, 40P01: e.g. a role with
 *   default_transaction_isolation = serializable) roll the transaction back; it is run again up to
 *   DEFAULTS.serializationRetries times after a short random pause. A rolled-back attempt recorded
 *   nothing, so a retry can never hand out a second Proceed.
 *
 * Sources: PostgreSQL documentation, "Client Connection Defaults" (statement_timeout,
 * lock_timeout) and Appendix A, "PostgreSQL Error Codes".
 */
import type { Pool, PoolClient } from 'pg';
import { checkedOut } from './checkout';

export const DEFAULTS = {
	/** Longest a batch statement may run, in milliseconds. */
	statementTimeoutMs: 30_000,
	/** Longest wait for one row lock, in milliseconds. */
	lockTimeoutMs: 5_000,
	/** Longest wait for a pool connection (and for a new connection's handshake), in milliseconds. */
	connectTimeoutMs: 10_000,
	/** Runs after the first on 40001 / 40P01. */
	serializationRetries: 3,
	/** Pause before retry n (1-based): random in [0, retryBaseMs * 2^(n-1)) plus retryBaseMs / 2. */
	retryBaseMs: 20,
} as const;

/** Accepted ranges (milliseconds) for the credential fields. */
export const RANGES = {
	statementTimeoutMs: { min: 100, max: 600_000 },
	lockTimeoutMs: { min: 10, max: 600_000 },
	connectTimeoutMs: { min: 100, max: 600_000 },
} as const;

export interface Bounds {
	statementTimeoutMs: number;
	lockTimeoutMs: number;
}

/** SQLSTATEs that mean "this transaction was rolled back; running it again is safe". */
export const RETRY_CODES = new Set(['40001', '40P01']);
/** SQLSTATEs of a bound that fired: lock_not_available, query_canceled (statement_timeout). */
export const BOUND_CODES = new Set(['55P03', '57014']);

function clamp(value: unknown, fallback: number, range: { min: number; max: number }): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isFinite(n)) return fallback;
	return Math.min(Math.max(Math.trunc(n), range.min), range.max);
}

/** Bounds from credential values (missing or invalid values take the defaults; out of range is clamped). */
export function toBounds(c: { statementTimeoutMs?: unknown; lockTimeoutMs?: unknown } = {}): Bounds {
	return {
		statementTimeoutMs: clamp(c.statementTimeoutMs, DEFAULTS.statementTimeoutMs, RANGES.statementTimeoutMs),
		lockTimeoutMs: clamp(c.lockTimeoutMs, DEFAULTS.lockTimeoutMs, RANGES.lockTimeoutMs),
	};
}

/** The pool connection wait from a credential value (default 10000 ms; out of range is clamped). */
export function toConnectTimeout(value: unknown): number {
	return clamp(value, DEFAULTS.connectTimeoutMs, RANGES.connectTimeoutMs);
}

/** Raised when a bound fired for the whole batch: nothing was recorded and running it again is safe. */
export class LedgerBusyError extends Error {
	constructor(
		message: string,
		public readonly code: string,
	) {
		super(message);
		this.name = 'LedgerBusyError';
	}
}

type Runner = Pick<Pool | PoolClient, 'query'> & { connect?: unknown; release?: unknown };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs one batch statement bounded as described above and returns its rows. `db` is normally the
 * pool; given a checked-out client (one with release()), the statement runs in the caller's own
 * transaction with the caller's settings, unchanged.
 */
export async function boundedQuery<R extends object>(db: Runner, text: string, values: unknown[], bounds: Bounds = toBounds()): Promise<R[]> {
	return boundedStatements<R>(db, text, [values], bounds);
}

/**
 * Like boundedQuery, for one statement text run once per parameter set (the chunks of a large
 * batch, src/db/batch.ts): all of them in ONE bounded transaction, rows concatenated in order.
 * statement_timeout applies to each statement; a retry re-runs every chunk.
 */
export async function boundedStatements<R extends object>(db: Runner, text: string, valueSets: unknown[][], bounds: Bounds = toBounds()): Promise<R[]> {
	// A pool (pg's Pool or the nodes' LedgerPool, both with totalCount) gets its own bounded
	// transaction; a client (checked out, or a plain pg Client) runs in the caller's transaction.
	const isPool = typeof db.connect === 'function' && typeof db.release !== 'function' && 'totalCount' in db;
	if (!isPool) {
		const out: R[] = [];
		for (const values of valueSets) out.push(...(await (db as Pick<Pool, 'query'>).query<R>(text, values)).rows);
		return out;
	}
	const pool = db as unknown as Pool;
	const b = toBounds(bounds);
	const RETRY = Symbol('retry');
	for (let attempt = 0; ; attempt++) {
		const out = await checkedOut(pool, async (client, markBroken): Promise<R[] | typeof RETRY> => {
			try {
				await client.query(`BEGIN; SET LOCAL statement_timeout = ${b.statementTimeoutMs}; SET LOCAL lock_timeout = ${b.lockTimeoutMs}`);
				const rows: R[] = [];
				for (const values of valueSets) rows.push(...(await client.query<R>(text, values)).rows);
				await client.query('COMMIT');
				return rows;
			} catch (e) {
				const code = (e as { code?: string }).code ?? '';
				await client.query('ROLLBACK').catch((re: Error) => markBroken(re));
				if (RETRY_CODES.has(code) && attempt < DEFAULTS.serializationRetries) {
					// Backs off while still holding the client, then retries on a fresh checkout.
					await sleep(DEFAULTS.retryBaseMs / 2 + Math.random() * DEFAULTS.retryBaseMs * 2 ** attempt);
					return RETRY;
				}
				if (BOUND_CODES.has(code)) {
					const which =
						code === '55P03'
							? `a row lock was not granted within the lock timeout (${b.lockTimeoutMs} ms)`
							: `the statement did not finish within the statement timeout (${b.statementTimeoutMs} ms)`;
					throw new LedgerBusyError(
						`The database did not answer in time: ${which}. The batch was rolled back, so nothing of it was recorded; running it again is safe (SQLSTATE ${code})`,
						code,
					);
				}
				if (RETRY_CODES.has(code)) {
					(e as Error).message = `${(e as Error).message} (still failing after ${DEFAULTS.serializationRetries} retries; nothing was recorded, running it again is safe)`;
				}
				if (!code || /^(08|57P0)/.test(code)) markBroken(e as Error);
				throw e;
			}
		});
		if (out !== RETRY) return out;
	}
}
