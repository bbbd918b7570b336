/**
 * Connection pools, one per distinct connection (credential), kept across node executions.
 *
 * - Bounded: at most `maxConnections` clients per pool (default 5) and, softly, at most
 *   MAX_POOLS pools per process (32; env OPERATION_LEDGER_MAX_POOLS): when a new pool would exceed
 *   that, the least recently used pool without leases is closed. If every pool is leased, the least
 *   recently used one leaves the map and is ended when its last lease is released (so, briefly,
 *   more than MAX_POOLS pools may be open while all of them are in use).
 * - Closed when idle: a client idle for 10 s (OPERATION_LEDGER_IDLE_CLIENT_MS) is closed by pg itself; a whole pool
 *   with no lease and unused for IDLE_POOL_MS (5 min; env OPERATION_LEDGER_POOL_IDLE_MS) is ended by
 *   a sweeper timer that runs every SWEEP_MS (30 s; env OPERATION_LEDGER_POOL_SWEEP_MS) and never
 *   keeps the process alive. The env variables exist for tests; the defaults are the production values.
 * - Leases: nothing ends a pool someone still uses. acquirePool() returns {pool, release}; the
 *   sweeper and eviction skip pools with leases, and a pool evicted while leased is taken out of the
 *   map (new callers get a fresh pool) and ended when its last lease is released.
 * - getPool() returns a LedgerPool: a stable handle per connection that holds no pool between
 *   calls. Each query leases the current pool for the query's duration; each connect() leases it
 *   until the client is released. So a long-lived holder (the trigger) or an execution paused
 *   between two statements never sees "Cannot use a pool after calling end on the pool": its next
 *   call simply uses (or creates) the current pool.
 * - No global pg.types change: timestamptz comes back as a JS Date (pg's default) and callers
 *   convert it to ISO-8601; int8 comes back as a string (pg's default), so bigint ids stay exact.
 */
import { createHash } from 'node:crypto';
import type { ClientConfig, Pool as PgPool, PoolClient, PoolConfig, QueryConfig, QueryResult } from 'pg';
import { IsolatedClient, Pool } from '../vendor';
import { resolveEndpoint, toPgSsl, type EndpointInput, type SslMode } from './endpoint';
import { DEFAULTS, roundTripDeadlineMs } from './bounds';
import { checkedOut } from './checkout';
import { DeadlineError } from './deadline';
import { LIMITS } from '../limits';

export type { SslMode };

/** What a credential provides. Either `connectionString` or host/port/database/user/password. */
export interface ConnectionConfig extends EndpointInput {
	/**
	 * The credential's SSL mode (libpq's names). A connection string's sslmode/ssl can only make it
	 * stricter (see endpoint.ts). `require` encrypts without checking the certificate; `verify-ca`
	 * checks the chain against `ca`; `verify-full` also checks the host name.
	 */
	ssl?: SslMode;
	/** PEM CA certificate(s) for `verify-ca` / `verify-full`; empty means the system's trusted CAs. */
	ca?: string;
	/**
	 * Schema holding the ledger and queue tables, as configured (`operation_ledger`). The pool does
	 * not use it (two schemas on one server share a pool); ledgerSchema() (src/db/identifiers.ts)
	 * validates it once where the connection is opened (nodes/shared/connection.ts).
	 */
	schema: string;
	/** Whether the nodes may apply schema/ migrations on first use. */
	autoApplySchema?: boolean;
	/** Upper bound of clients in this process's pool for this connection (1..100, default 5). */
	maxConnections?: number;
	/** Milliseconds to wait for a pool connection or a new connection's handshake (default 10000, src/db/bounds.ts). */
	connectTimeoutMs?: number;
	/** statement_timeout for each batch transaction of the ledger and the queue, ms (default 30000, src/db/bounds.ts). */
	statementTimeoutMs?: number;
	/** lock_timeout for each batch transaction of the ledger and the queue, ms (default 5000, src/db/bounds.ts). */
	lockTimeoutMs?: number;
}


/** Reads a positive integer from the environment (tests), else the default. */
function envInt(name: string, fallback: number): number {
	const raw = process.env[name];
	if (raw === undefined || raw === '') return fallback;
	const n = Number(raw);
	return Number.isInteger(n) && n > 0 ? n : fallback;
}
/** Ms a connection may sit idle in a pool before pg closes it (default 10000; tests shorten it). */
const idleClientMs = () => envInt('OPERATION_LEDGER_IDLE_CLIENT_MS', 10_000);
/** Pools per process before the least recently used unleased one is closed (default 32). */
const maxPools = () => envInt('OPERATION_LEDGER_MAX_POOLS', 32);
/** Ms a pool without leases may stay unused before the sweeper ends it (default 300000 = 5 min). */
const idlePoolMs = () => envInt('OPERATION_LEDGER_POOL_IDLE_MS', 5 * 60_000);
/** Ms between sweeps (default 30000). */
const sweepMs = () => envInt('OPERATION_LEDGER_POOL_SWEEP_MS', 30_000);

interface Entry {
	key: string;
	pool: PgPool;
	lastUsed: number;
	/** Open leases: acquirePool() calls not yet released. */
	leases: number;
	/** Taken out of the map (evicted or closeAllPools); ended when `leases` reaches 0. */
	retired: boolean;
}
const pools = new Map<string, Entry>();
const handles = new Map<string, LedgerPool>();
let sweeper: NodeJS.Timeout | undefined;
/** Counters for tests and diagnostics. */
export const poolCounters = { created: 0, ended: 0, sweptIdle: 0, evicted: 0, deferredEnds: 0 };

function poolKey(cfg: ConnectionConfig): string {
	const identity = [
		cfg.connectionString ?? '',
		cfg.host ?? '',
		cfg.port ?? '',
		cfg.database ?? '',
		cfg.user ?? '',
		cfg.password ?? '',
		cfg.ssl ?? 'disable',
		cfg.ca ?? '',
		cfg.maxConnections ?? '',
		cfg.connectTimeoutMs ?? '',
		// Its clients carry the round-trip deadline derived from it (query_timeout).
		cfg.statementTimeoutMs ?? '',
	];
	return createHash('sha256').update(JSON.stringify(identity)).digest('hex');
}

/**
 * Translates a ConnectionConfig into pg's PoolConfig: every connection parameter explicit (see
 * endpoint.ts), so pg never falls back to PG* environment variables or ~/.pgpass. The password is
 * given as a function, which makes pg send exactly it (an empty one included) and skip ~/.pgpass.
 * Every connection gets TCP keepalive (first probe after DEFAULTS.keepAliveIdleMs without traffic)
 * and pg's query_timeout = roundTripDeadlineMs (Statement Timeout + margin) for any statement sent
 * without a deadline of its own; the core's statements get theirs per round trip and have their
 * connection destroyed when it passes (src/db/checkout.ts, src/db/deadline.ts).
 * Throws EndpointError when the credential is incomplete or its connection string is refused.
 */
export function toPgConfig(cfg: ConnectionConfig): PoolConfig {
	const e = resolveEndpoint(cfg);
	const max = Math.min(Math.max(Math.trunc(cfg.maxConnections ?? LIMITS.maxConnections.default), LIMITS.maxConnections.min), LIMITS.maxConnections.max);
	const password = e.password;
	return {
		max,
		idleTimeoutMillis: idleClientMs(),
		connectionTimeoutMillis: cfg.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
		keepAlive: true,
		keepAliveInitialDelayMillis: DEFAULTS.keepAliveIdleMs,
		query_timeout: roundTripDeadlineMs(cfg),
		allowExitOnIdle: true,
		application_name: 'n8n-nodes-operation-ledger',
		host: e.host,
		port: e.port,
		database: e.database,
		user: e.user,
		password: () => password,
		ssl: toPgSsl(e),
		...(e.options ? { options: e.options } : {}),
		// Explicit, so PGSSLNEGOTIATION cannot change it.
		sslnegotiation: 'postgres',
		Client: IsolatedClient,
	} as PoolConfig;
}

/**
 * The same explicit connection settings for a single pg Client (LISTEN, the credential test):
 * toPgConfig without the pool-only options. Use with IsolatedClient. Throws EndpointError.
 */
export function toClientConfig(cfg: ConnectionConfig): ClientConfig {
	const all = { ...toPgConfig(cfg) } as Record<string, unknown>;
	for (const poolOnly of ['max', 'idleTimeoutMillis', 'allowExitOnIdle', 'Client']) delete all[poolOnly];
	return all as ClientConfig;
}

function endEntry(entry: Entry): void {
	poolCounters.ended++;
	void entry.pool.end().catch(() => undefined);
}

/** Takes an entry out of the map; ends its pool now, or when its last lease is released. */
function retire(entry: Entry): void {
	if (pools.get(entry.key) === entry) pools.delete(entry.key);
	if (entry.retired) return;
	entry.retired = true;
	if (entry.leases === 0) endEntry(entry);
	else poolCounters.deferredEnds++;
}

function sweep(): void {
	const now = Date.now();
	const idleMs = idlePoolMs();
	for (const entry of [...pools.values()]) {
		if (
			entry.leases === 0 &&
			now - entry.lastUsed > idleMs &&
			entry.pool.waitingCount === 0 &&
			entry.pool.idleCount === entry.pool.totalCount
		) {
			poolCounters.sweptIdle++;
			retire(entry);
		}
	}
	if (pools.size === 0 && sweeper) {
		clearInterval(sweeper);
		sweeper = undefined;
	}
}

function startSweeper(): void {
	if (sweeper) return;
	sweeper = setInterval(sweep, sweepMs());
	sweeper.unref();
}

/** A lease on a pool: the pool is not ended before release() (idempotent) is called. */
export interface PoolLease {
	pool: PgPool;
	release(): void;
}

/**
 * Leases the process-wide pool for this connection, creating it on first use. Call release()
 * exactly when done (a second call does nothing). While leased, neither the idle sweeper nor
 * eviction ends the pool.
 */
export function acquirePool(cfg: ConnectionConfig): PoolLease {
	return leaseKey(poolKey(cfg), cfg);
}

function leaseKey(key: string, cfg: ConnectionConfig): PoolLease {
	let entry = pools.get(key);
	if (!entry) {
		if (pools.size >= maxPools()) {
			// The least recently used pool without leases; if every pool is leased, the least
			// recently used one leaves the map and ends when its last lease is released.
			let oldest: Entry | undefined;
			for (const e of pools.values()) if (e.leases === 0 && (!oldest || e.lastUsed < oldest.lastUsed)) oldest = e;
			if (!oldest) for (const e of pools.values()) if (!oldest || e.lastUsed < oldest.lastUsed) oldest = e;
			if (oldest) {
				poolCounters.evicted++;
				retire(oldest);
			}
		}
		const pool = new Pool(toPgConfig(cfg));
		// An idle client whose server went away emits 'error' on the pool; without a listener that
		// would crash the n8n process. The broken client is discarded by pg; the next query reconnects.
		pool.on('error', () => undefined);
		// A checked-out client whose backend is killed emits 'error' itself (pg-pool listens only while
		// it is idle); the query in flight rejects with the same error, which the caller handles.
		pool.on('connect', (client) => {
			client.on('error', () => undefined);
		});
		entry = { key, pool, lastUsed: Date.now(), leases: 0, retired: false };
		pools.set(key, entry);
		poolCounters.created++;
		startSweeper();
	}
	const e = entry;
	e.leases++;
	e.lastUsed = Date.now();
	let released = false;
	return {
		pool: e.pool,
		release() {
			if (released) return;
			released = true;
			e.leases--;
			e.lastUsed = Date.now();
			if (e.retired && e.leases === 0) endEntry(e);
		},
	};
}

/**
 * What the nodes use as "the pool": query() and connect() like pg's Pool (promise forms only),
 * each leasing the current pool of its connection for as long as it runs (connect: until the
 * client is released). Holds no pool itself, so nothing another part ends can break it.
 */
export class LedgerPool {
	constructor(
		private readonly key: string,
		private readonly cfg: ConnectionConfig,
	) {}

	/**
	 * pg's `pool.query(text, values?)` / `pool.query(config)` (promise forms only; a callback
	 * argument is refused); resolves to pg's QueryResult. Typed as pg's Pool.query so the handle
	 * goes wherever a pool's query does.
	 */
	readonly query = ((text: string | QueryConfig, values?: unknown[]): Promise<QueryResult> => {
		if (typeof values === 'function') {
			return Promise.reject(new Error('LedgerPool.query: callback form not supported'));
		}
		const lease = leaseKey(this.key, this.cfg);
		let p: Promise<QueryResult>;
		try {
			p = lease.pool.query(text as string, values);
		} catch (e) {
			lease.release();
			throw e;
		}
		return p.finally(() => lease.release());
	}) as unknown as PgPool['query'];

	/** Checks out a client; the pool stays leased until `client.release()`. */
	async connect(): Promise<PoolClient> {
		const lease = leaseKey(this.key, this.cfg);
		let client: PoolClient;
		try {
			client = await lease.pool.connect();
		} catch (e) {
			lease.release();
			throw e;
		}
		const pgRelease = client.release.bind(client);
		let done = false;
		client.release = (err?: Error | boolean) => {
			if (!done) {
				done = true;
				client.release = pgRelease;
				try {
					pgRelease(err);
				} finally {
					lease.release();
				}
				return;
			}
			pgRelease(err);
		};
		return client;
	}

	/** Clients of the current pool (0 when none is open). Diagnostics and tests. */
	get totalCount(): number {
		return pools.get(this.key)?.pool.totalCount ?? 0;
	}
}

/**
 * Returns the stable LedgerPool handle for this connection (one per distinct connection per
 * process). The schema is not the pool's: openLedgerConnection validates it first (ledgerSchema()).
 */
export function getPool(cfg: ConnectionConfig): LedgerPool {
	const key = poolKey(cfg);
	let h = handles.get(key);
	if (!h) {
		h = new LedgerPool(key, { ...cfg });
		handles.set(key, h);
	}
	return h;
}

/**
 * Checks out a client, runs `fn` on it with every round trip bounded by `deadlineMs` (a statement
 * may pass its own `query_timeout`; src/db/deadline.ts), and returns the client (destroying it if
 * `fn` threw a connection error or a deadline passed).
 */
export async function withClient<T>(pool: Pick<PgPool | LedgerPool, 'connect'>, deadlineMs: number, fn: (client: Pick<PoolClient, 'query'>) => Promise<T>): Promise<T> {
	return checkedOut(pool as { connect(): Promise<PoolClient> }, deadlineMs, async (client, markBroken) => {
		try {
			return await fn(client);
		} catch (e) {
			if (isConnectionError(e)) markBroken(e as Error);
			throw e;
		}
	});
}

/** True for errors after which the connection must not be reused. */
export function isConnectionError(e: unknown): boolean {
	const err = e as { code?: string; message?: string };
	if (!err) return false;
	if (e instanceof DeadlineError) return true;
	if (err.code && /^(08|57P0)/.test(err.code)) return true;
	return /Connection terminated|ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|timeout/i.test(err.message ?? '');
}

/** Ends every pool at once, leased or not (tests and process shutdown). */
export async function closeAllPools(): Promise<void> {
	const all = [...pools.values()];
	pools.clear();
	handles.clear();
	if (sweeper) {
		clearInterval(sweeper);
		sweeper = undefined;
	}
	for (const e of all) e.retired = true;
	await Promise.all(all.map((e) => e.pool.end().catch(() => undefined)));
}

/** Number of pools currently in the map (not retired) in this process (diagnostics and tests). */
export function openPoolCount(): number {
	return pools.size;
}

/** Open leases on the current pool of this connection (diagnostics and tests). */
export function leaseCount(cfg: ConnectionConfig): number {
	return pools.get(poolKey(cfg))?.leases ?? 0;
}
