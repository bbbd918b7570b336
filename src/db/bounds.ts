/**
 * Every statement the nodes send (ledger and queue, the trigger's included) is bounded in time.
 * Each call runs as one transaction on a client taken from the pool:
 *
 *   BEGIN; SET LOCAL statement_timeout = <ms>; SET LOCAL lock_timeout = <ms>;
 *   SELECT * FROM <schema>.<function>(...)                                      (the batch)
 *   COMMIT
 *
 * sent as ONE simple-protocol query when the values are plain (boundedQuery), else in three round
 * trips (boundedStatements, boundedTransaction). SET LOCAL, not startup parameters: PgBouncer in
 * transaction mode refuses those, and SET LOCAL ends with the transaction, so nothing is left on a
 * pooled server connection.
 *
 * - Waiting for a pool connection is bounded by the pool's connectionTimeoutMillis (credential
 *   "Connection Timeout (ms)", default DEFAULTS.connectTimeoutMs).
 * - Locks other transactions hold are waited for at most lock_timeout (credential "Lock Timeout
 *   (ms)") per batch: the SQL functions share that one budget among all their waits (ol_lock_budget,
 *   docs/queue.md). The ledger functions catch SQLSTATE 55P03 per item and answer `busy` for those
 *   keys alone; the other keys of the batch carry on. Elsewhere (the queue's
 *   settles, any table lock) the transaction is rolled back and LedgerBusyError is thrown.
 * - The whole batch statement is bounded by statement_timeout (credential "Statement Timeout (ms)");
 *   when it fires (57014) the transaction is rolled back and nothing of the batch was recorded.
 * - The server enforces those; when the server is frozen or the network drops packets they cannot
 *   fire. So the client bounds each round trip as well (src/db/deadline.ts): roundTripDeadlineMs =
 *   Statement Timeout + DEFAULTS.deadlineMarginMs. When it passes, the connection is destroyed
 *   (never returned to the pool; the pool opens a new one for the next call) and the call rejects
 *   with DeadlineError, or with OutcomeUnknownError when the round trip carried the COMMIT.
 * - A lost connection (the deadline, a reset, a server shutting down) while the COMMIT was on its
 *   way (the one round trip carries it) means nobody knows whether the batch was recorded:
 *   OutcomeUnknownError says so, and carries whether sending each item again is safe (the caller's
 *   `repeatSafe`). Lost before the COMMIT was sent: the server rolls the transaction back, nothing
 *   was recorded, the connection error is thrown as it is.
 * - Serialization failures and deadlocks (40001, 40P01: e.g. a role with
 *   default_transaction_isolation = serializable) roll the transaction back; it is run again up to
 *   DEFAULTS.serializationRetries times after a short random pause. A rolled-back attempt recorded
 *   nothing, so a retry can never hand out a second Proceed or claim a task twice. A connection
 *   error is never retried: the COMMIT may have happened.
 * - A COMMIT that waits for a synchronous standby is not bounded by statement_timeout (Postgres
 *   stops the timer before it commits). The round trip carrying the COMMIT is cancelled by the
 *   client after Statement Timeout + DEFAULTS.syncRepCancelMarginMs (before the deadline above);
 *   Postgres then answers it as committed locally with a WARNING, and the call throws
 *   ReplicationUnconfirmedError (recorded here, not confirmed by the standby; the caller's
 *   `repeatSafe` says whether each item may be sent again; src/db/syncRep.ts). The same when
 *   someone else cancelled the wait. A connection that carried such a cancel is destroyed.
 * - With a client instead of a pool (a caller's own transaction), the statement runs as it is, with
 *   the caller's settings.
 *
 * Sources: PostgreSQL documentation, "Client Connection Defaults" (statement_timeout,
 * lock_timeout; "the timeout is applied to each statement separately" of a multi-statement simple
 * Query since PostgreSQL 13), "Message Flow: Multiple Statements in a Simple Query", and
 * Appendix A, "PostgreSQL Error Codes".
 */
import type { Pool, PoolClient } from 'pg';
import { checkedOut } from './checkout';
import { DeadlineError } from './deadline';
import { ReplicationUnconfirmedError, watchSyncRep } from './syncRep';
import { prepareValue } from '../vendor';
import { CoreError, everyItemSafe } from '../errors';
import { LIMITS } from '../limits';

export { DeadlineError } from './deadline';
export { ReplicationUnconfirmedError } from './syncRep';

export const DEFAULTS = {
	/** Longest a batch statement may run, in milliseconds (LIMITS.statementTimeoutMs). */
	statementTimeoutMs: LIMITS.statementTimeoutMs.default,
	/** Longest wait for the row locks of one batch, in milliseconds (LIMITS.lockTimeoutMs). */
	lockTimeoutMs: LIMITS.lockTimeoutMs.default,
	/** Longest wait for a pool connection (and for a new connection's handshake), in milliseconds (LIMITS.connectTimeoutMs). */
	connectTimeoutMs: LIMITS.connectTimeoutMs.default,
	/**
	 * Longest wait of the schema migrator for a lock, in milliseconds: its advisory lock (another
	 * process applying the schema) and each table lock a migration statement takes (src/db/migrate.ts).
	 */
	migrateLockTimeoutMs: 60_000,
	/**
	 * Milliseconds the client waits beyond Statement Timeout for the answer to one round trip before
	 * it destroys the connection (roundTripDeadlineMs). Covers the network and the server's own
	 * cancel; only a frozen server or a network that drops packets is slower.
	 */
	deadlineMarginMs: 2_000,
	/**
	 * Milliseconds beyond Statement Timeout the round trip carrying a COMMIT may run before the
	 * client cancels it (a wait for a synchronous standby, which statement_timeout does not end;
	 * src/db/syncRep.ts). Below deadlineMarginMs, so the server's answer to the cancel can arrive.
	 */
	syncRepCancelMarginMs: 1_000,
	/**
	 * Client deadline of one schema-migration statement (DDL on the package's own tables, which runs
	 * without statement_timeout on the server: an index build on a large table may take minutes).
	 */
	migrateStatementDeadlineMs: 600_000,
	/**
	 * TCP keepalive on every connection: the first probe after this many milliseconds without
	 * traffic (pg's keepAliveInitialDelayMillis; interval and count are the OS's, Linux 75 s x 9).
	 */
	keepAliveIdleMs: 10_000,
	/** Runs after the first on 40001 / 40P01. */
	serializationRetries: 3,
	/** Pause before retry n (1-based): random in [0, retryBaseMs * 2^(n-1)) plus retryBaseMs / 2. */
	retryBaseMs: 20,
} as const;

/** Accepted ranges (milliseconds) for the credential fields (LIMITS, src/limits.ts). */
export const RANGES = {
	statementTimeoutMs: LIMITS.statementTimeoutMs,
	lockTimeoutMs: LIMITS.lockTimeoutMs,
	connectTimeoutMs: LIMITS.connectTimeoutMs,
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

/**
 * The client's deadline for one round trip under these bounds, in milliseconds: Statement Timeout
 * plus DEFAULTS.deadlineMarginMs (32000 with the defaults). When it passes the connection is
 * destroyed (src/db/deadline.ts).
 */
export function roundTripDeadlineMs(b: Pick<Bounds, 'statementTimeoutMs'> | { statementTimeoutMs?: unknown } = {}): number {
	return clamp(b.statementTimeoutMs, DEFAULTS.statementTimeoutMs, RANGES.statementTimeoutMs) + DEFAULTS.deadlineMarginMs;
}

/** The pool connection wait from a credential value (default 10000 ms; out of range is clamped). */
export function toConnectTimeout(value: unknown): number {
	return clamp(value, DEFAULTS.connectTimeoutMs, RANGES.connectTimeoutMs);
}

/** Raised when a bound fired for the whole batch: nothing was recorded and running it again is safe (retryable). */
export class LedgerBusyError extends CoreError {
	readonly retryable = true;
	constructor(
		message: string,
		public readonly code: string,
	) {
		super(message);
		this.name = 'LedgerBusyError';
	}
}

/**
 * The connection was lost while the round trip carrying the batch's COMMIT was on its way (the
 * client's deadline passed, the connection was reset, the server shut down): Postgres may have
 * committed the batch or not, and nobody can tell from here. `cause` is the connection error.
 * `retryableItem(i)` says whether sending item i (0-based, in the order the call got them) again
 * cannot repeat its effect (the caller's CallOptions.repeatSafe; default: not safe); `retryable` is
 * true when that holds for every item.
 */
export class OutcomeUnknownError extends CoreError {
	readonly code: string | undefined;
	readonly retryable: boolean;
	constructor(
		public readonly cause: Error,
		private readonly repeatSafe: boolean | readonly boolean[] = false,
	) {
		super(
			`the connection to the database was lost while the batch's COMMIT was on its way (${cause.message}), ` +
				'so Postgres may have recorded the batch, or not',
		);
		this.name = 'OutcomeUnknownError';
		this.code = (cause as { code?: string }).code;
		this.retryable = everyItemSafe(repeatSafe);
	}

	/** Whether sending item `position` again cannot repeat its effect. */
	retryableItem(position: number): boolean {
		return typeof this.repeatSafe === 'boolean' ? this.repeatSafe : this.repeatSafe[position] === true;
	}
}

/** How a bounded call classifies a lost connection (see OutcomeUnknownError). */
export interface CallOptions {
	/** The call writes nothing: a connection lost during its COMMIT changed nothing either. */
	readOnly?: boolean;
	/**
	 * Whether sending the call (true/false) or each of its items (one flag per item, in order)
	 * again cannot repeat its effect, e.g. a Reserve of the same operation key answers "in progress",
	 * an Enqueue with a dedupe key answers "deduplicated". Carried by OutcomeUnknownError. Default false.
	 */
	repeatSafe?: boolean | readonly boolean[];
}

type Runner = Pick<Pool | PoolClient, 'query'> & { connect?: unknown; release?: unknown };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * True when `db` is a pool (pg's Pool or the nodes' LedgerPool, both with totalCount): the call
 * gets a bounded transaction of its own. A client (checked out, or a plain pg Client) runs in the
 * caller's transaction with the caller's settings.
 */
function isPool(db: Runner): boolean {
	return typeof db.connect === 'function' && typeof db.release !== 'function' && 'totalCount' in db;
}

/** `BEGIN; SET LOCAL statement_timeout = …; SET LOCAL lock_timeout = …` for these bounds (milliseconds). */
export function beginSql(b: Bounds): string {
	return `BEGIN; SET LOCAL statement_timeout = ${b.statementTimeoutMs}; SET LOCAL lock_timeout = ${b.lockTimeoutMs}`;
}

/**
 * True when `e` means the connection is gone and the server gave no answer to the statement: the
 * client's deadline, a socket error, an end of the connection, or a FATAL (class 08, 57P0x). An
 * ERROR the server answered (any other SQLSTATE) means the statement failed and nothing committed.
 */
export function isLostConnection(e: unknown): boolean {
	if (e instanceof DeadlineError) return true;
	const err = (e ?? {}) as { code?: unknown; message?: unknown; severity?: unknown };
	const code = typeof err.code === 'string' ? err.code : '';
	if (/^[0-9A-Z]{5}$/.test(code) && typeof err.severity === 'string') return /^(08|57P0)/.test(code) || err.severity === 'FATAL' || err.severity === 'PANIC';
	if (/^(08|57P0)/.test(code) || /^(ECONN|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENETDOWN)/.test(code)) return true;
	return /Connection terminated|not queryable|ECONNRESET|EPIPE|socket hang up/i.test(typeof err.message === 'string' ? err.message : '');
}

/** pg's refusal to send on a client whose connection already failed: nothing went out. */
const NOT_SENT = /Client has encountered a connection error and is not queryable|Client was closed and is not queryable/;

/** A FATAL the server sent (e.g. 57P01 when a backend is terminated): what it sent before arrived too. */
function isServerFatal(e: unknown): boolean {
	const err = (e ?? {}) as { code?: unknown; severity?: unknown };
	return typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code) && (err.severity === 'FATAL' || err.severity === 'PANIC');
}

/**
 * Runs `body` (which sends BEGIN … COMMIT itself, and calls `committing(before)` just before the
 * round trip that carries the COMMIT, `before` = the statements ahead of the COMMIT in that round
 * trip) on a checked-out client whose every round trip is bounded by the client's deadline, with
 * the error handling every bounded transaction shares: ROLLBACK on an error the server answered;
 * 40001/40P01 run the whole transaction again (it was rolled back, so it recorded nothing);
 * 55P03/57014 become LedgerBusyError; a lost connection destroys the client (no ROLLBACK: the
 * server rolls back a transaction whose connection ended) and is never retried. A lost connection
 * is thrown as it is when the COMMIT certainly did not run: it was not sent yet, or the server's
 * FATAL (which arrives after everything it sent before) came before it reported the statements
 * ahead of the COMMIT complete (Postgres reports each before it starts the next). Otherwise it
 * becomes OutcomeUnknownError (unless the call is read-only): the COMMIT may have run.
 */
async function inTransaction<R>(pool: Pool, b: Bounds, options: CallOptions, body: (client: Pick<PoolClient, 'query'>, committing: (before: number) => void) => Promise<R>): Promise<R> {
	const RETRY = Symbol('retry');
	const deadlineMs = roundTripDeadlineMs(b);
	for (let attempt = 0; ; attempt++) {
		const out = await checkedOut(pool, deadlineMs, async (client, markBroken, raw): Promise<R | typeof RETRY> => {
			let aheadOfCommit: number | undefined;
			// The COMMIT's wait for a synchronous standby (src/db/syncRep.ts).
			const watch = watchSyncRep(raw as unknown as Parameters<typeof watchSyncRep>[0], b.statementTimeoutMs + DEFAULTS.syncRepCancelMarginMs, DEFAULTS.connectTimeoutMs);
			const cancelled = () => markBroken(new Error('a cancel request was sent on this connection'));
			try {
				const result = await body(client, (before) => {
					aheadOfCommit = before;
					watch.arm();
				});
				watch.disarm();
				if (watch.cancelSent) cancelled();
				if (watch.unconfirmed()) {
					markBroken(new Error('waiting for synchronous replication was cancelled on this connection'));
					throw new ReplicationUnconfirmedError(watch.cancelSent ? watch.cancelAfterMs : null, false, options.repeatSafe ?? false);
				}
				return result;
			} catch (e) {
				watch.disarm();
				if (e instanceof ReplicationUnconfirmedError) throw e;
				if (watch.cancelSent) cancelled();
				// The server ended the sync-rep wait and then the connection (a terminate): the commit
				// record is on this server all the same.
				if (watch.warned && isLostConnection(e)) {
					markBroken(e as Error);
					throw new ReplicationUnconfirmedError(watch.cancelSent ? watch.cancelAfterMs : null, true, options.repeatSafe ?? false);
				}
				if (isLostConnection(e)) {
					markBroken(e as Error);
					const commitCertainlyNotRun =
						aheadOfCommit === undefined || NOT_SENT.test((e as Error).message ?? '') || (isServerFatal(e) && client.completedStatements() < aheadOfCommit);
					if (!commitCertainlyNotRun && !options.readOnly) throw new OutcomeUnknownError(e as Error, options.repeatSafe);
					throw e;
				}
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
				throw e;
			} finally {
				watch.stop();
			}
		});
		if (out !== RETRY) return out;
	}
}

/**
 * Runs `work` in one bounded transaction (BEGIN; SET LOCAL statement_timeout / lock_timeout; work;
 * COMMIT) and returns its result; for several different statements that belong together (e.g.
 * queue stats). With a client instead of a pool, `work` runs on it directly, in the caller's
 * transaction with the caller's settings. `work` may run more than once (serialization retries),
 * so it must not have effects outside the database. Throws LedgerBusyError when a bound fired,
 * DeadlineError or OutcomeUnknownError when the connection was lost (see inTransaction).
 */
export async function boundedTransaction<T>(
	db: Runner,
	bounds: Bounds | undefined,
	work: (q: Pick<PoolClient, 'query'>) => Promise<T>,
	options: CallOptions = {},
): Promise<T> {
	if (!isPool(db)) return work(db as Pick<PoolClient, 'query'>);
	const b = toBounds(bounds);
	return inTransaction(db as unknown as Pool, b, options, async (client, committing) => {
		await client.query(beginSql(b));
		const out = await work(client);
		committing(0);
		await client.query('COMMIT');
		return out;
	});
}

/**
 * `text` as an SQL string literal: quotes doubled; when it holds a backslash, the escape-string
 * form ` E'…'` with backslashes doubled as well, so the literal means the same whatever
 * standard_conforming_strings is. The same text pg's escapeLiteral makes (test/unit/db/batch.test.ts
 * compares them), in two native replaces instead of a loop over the characters: pg's takes about
 * 15 ms for 256 KiB of JSON on the benchmark machine, this one well under 1 ms, and its time grows
 * with the size alone.
 */
export function quoteLiteral(text: string): string {
	const quoted = text.replace(/'/g, "''");
	return text.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/**
 * `values` as SQL literals for the one-round-trip form, or undefined when one of them has no text
 * form (a Buffer) or holds a NUL character (then the statement is sent with parameters instead).
 * Each literal is exactly the text pg would send for that parameter (pg's own prepareValue: arrays
 * as Postgres array literals, objects as JSON, dates and numbers as pg formats them), quoted by pg's
 * quoteLiteral (the same text as pg's escapeLiteral); like an unspecified-type parameter, the literal takes its type from the
 * statement's casts or the function's argument. So inlining cannot change a value's meaning.
 */
function literals(values: unknown[]): string[] | undefined {
	const out: string[] = [];
	for (const v of values) {
		const text = prepareValue(v);
		if (text === null || text === undefined) {
			out.push('NULL');
			continue;
		}
		if (typeof text !== 'string' || text.includes('\u0000')) return undefined;
		out.push(quoteLiteral(text));
	}
	return out;
}

/**
 * How a statement text is inlined: its pieces around the placeholders and the placeholder numbers
 * ($1 → 1), or null when inlining it is not certain to mean the same (see inline()). Kept per text:
 * the texts are the core's fixed statements (one per function and schema), and deciding this took
 * about 10 µs of a 1-task claim's client time, against a Map lookup. At most INLINE_PLANS_MAX
 * texts are kept (the map starts again when full, so a caller with ever-new texts costs memory
 * for no more than that many).
 */
interface InlinePlan {
	pieces: string[];
	slots: number[];
}
const INLINE_PLANS = new Map<string, InlinePlan | null>();
const INLINE_PLANS_MAX = 512;

function inlinePlan(text: string): InlinePlan | null {
	let plan = INLINE_PLANS.get(text);
	if (plan !== undefined) return plan;
	if (/['";]|--|\/\*|\$\$/.test(text.replace(/"[a-z_][a-z0-9_]*"/g, ''))) {
		plan = null;
	} else {
		const pieces: string[] = [];
		const slots: number[] = [];
		let from = 0;
		for (const m of text.matchAll(/(?<![\w$])\$(\d+)(?!\w)/g)) {
			pieces.push(text.slice(from, m.index));
			slots.push(Number(m[1]));
			from = (m.index as number) + m[0].length;
		}
		pieces.push(text.slice(from));
		plan = { pieces, slots };
	}
	if (INLINE_PLANS.size >= INLINE_PLANS_MAX) INLINE_PLANS.clear();
	INLINE_PLANS.set(text, plan);
	return plan;
}

/**
 * `text` with $1..$n replaced by `values` as literals, or undefined when that is not certain to
 * mean the same: the text (quoted identifiers aside) holds a quote, a semicolon, a dollar quote or
 * a comment, a placeholder has no value,
 * or a value is not plain (see literals()).
 */
function inline(text: string, values: unknown[]): string | undefined {
	const plan = inlinePlan(text);
	if (plan === null) return undefined;
	const lit = literals(values);
	if (!lit) return undefined;
	let out = plan.pieces[0];
	for (let k = 0; k < plan.slots.length; k++) {
		const v = lit[plan.slots[k] - 1];
		if (v === undefined) return undefined;
		out += v + plan.pieces[k + 1];
	}
	return out;
}

/**
 * Runs one statement bounded as described above and returns its rows. `db` is normally the pool;
 * given a checked-out client (one with release()), the statement runs in the caller's own
 * transaction with the caller's settings, unchanged.
 *
 * With a pool it costs ONE round trip when every value has a text form without NUL (every call of
 * the ledger and queue core; see literals()): the transaction is sent as one
 * simple-protocol query, `BEGIN; SET LOCAL statement_timeout = …; SET LOCAL lock_timeout = …;
 * <statement with the values as literals>; COMMIT`. Postgres runs the statements of such a query
 * in order and (since PostgreSQL 13) applies statement_timeout to each statement separately, with
 * the value SET LOCAL gave it just before; the first error skips the rest, and the transaction is
 * rolled back. Otherwise (other value types) it is sent in three round trips as in
 * boundedStatements. docs/benchmarks-history.md ("Bounded claims") has the measured difference.
 * Each round trip is bounded by the client's deadline as well (roundTripDeadlineMs). Throws
 * LedgerBusyError (a server bound fired, nothing recorded), DeadlineError (no answer in time,
 * before the COMMIT was sent), OutcomeUnknownError (the connection was lost with the COMMIT on its
 * way; `options`: read-only calls never raise it, `repeatSafe` is carried), or pg's error.
 */
export async function boundedQuery<R extends object>(db: Runner, text: string, values: unknown[], bounds: Bounds = toBounds(), options: CallOptions = {}): Promise<R[]> {
	if (!isPool(db)) return (await (db as Pick<Pool, 'query'>).query<R>(text, values)).rows;
	const sql = inline(text, values);
	if (sql === undefined) return boundedStatements<R>(db, text, [values], bounds, options);
	const b = toBounds(bounds);
	return inTransaction(db as unknown as Pool, b, options, async (client, committing) => {
		// The one round trip carries the COMMIT, after BEGIN, two SET LOCALs and the statement.
		committing(4);
		const results = (await client.query(`${beginSql(b)}; ${sql}; COMMIT`)) as unknown as Array<{ rows: R[] }>;
		return results[3].rows;
	});
}

/**
 * Like boundedQuery, for several statements that belong in one transaction (the trigger's settle
 * of a finished execution together with its next claim, src/queue/completeAndDequeue.ts): with a
 * pool, ONE round trip `BEGIN; SET LOCAL …; <statement 1>; <statement 2>; …; COMMIT` when every
 * statement can be inlined (see inline()), else one round trip per statement inside one bounded
 * transaction. Returns each statement's rows, in order. statement_timeout applies to each
 * statement separately; the first error rolls back all of them (nothing recorded) and is thrown as
 * boundedQuery throws it. With a client, the statements run in order in the caller's transaction.
 */
export async function boundedQueries<R extends object = Record<string, unknown>>(
	db: Runner,
	statements: ReadonlyArray<{ text: string; values: unknown[] }>,
	bounds: Bounds = toBounds(),
	options: CallOptions = {},
): Promise<R[][]> {
	// One statement after the other: in the caller's transaction (a client), or in one bounded one.
	const each = async (q: Pick<Pool, 'query'>): Promise<R[][]> => {
		const out: R[][] = [];
		for (const st of statements) out.push((await q.query<R>(st.text, st.values)).rows);
		return out;
	};
	if (!isPool(db)) return each(db as Pick<Pool, 'query'>);
	const sqls = statements.map((st) => inline(st.text, st.values));
	if (sqls.some((s) => s === undefined)) return boundedTransaction(db, bounds, each, options);
	const b = toBounds(bounds);
	return inTransaction(db as unknown as Pool, b, options, async (client, committing) => {
		committing(3 + sqls.length);
		const results = (await client.query(`${beginSql(b)}; ${sqls.join('; ')}; COMMIT`)) as unknown as Array<{ rows: R[] }>;
		return sqls.map((_, i) => results[3 + i].rows);
	});
}

/**
 * Like boundedQuery, for one statement text run once per parameter set (the chunks of a large
 * batch, src/db/batch.ts): all of them in ONE bounded transaction, rows concatenated in order
 * (round trips: BEGIN with the SET LOCALs, one per parameter set, COMMIT).
 * statement_timeout applies to each statement; a retry re-runs every chunk.
 */
export async function boundedStatements<R extends object>(
	db: Runner,
	text: string,
	valueSets: unknown[][],
	bounds: Bounds = toBounds(),
	options: CallOptions = {},
): Promise<R[]> {
	return boundedTransaction(
		db,
		bounds,
		async (q) => {
			const rows: R[] = [];
			for (const values of valueSets) rows.push(...(await (q as Pick<Pool, 'query'>).query<R>(text, values)).rows);
			return rows;
		},
		options,
	);
}
