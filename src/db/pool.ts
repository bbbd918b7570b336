/**
 * Connection pools, one per distinct connection (credential), kept across node executions.
 *
 * - Bounded: at most `maxConnections` clients per pool (default 5) and at most MAX_POOLS pools per
 *   process; the least recently used pool is closed when a new one would exceed that.
 * - Closed when idle: a client idle for IDLE_CLIENT_MS (10 s) is closed by pg itself; a whole pool
 *   unused for IDLE_POOL_MS (5 min) is ended by a sweeper timer that never keeps the process alive.
 * - No global pg.types change: timestamptz comes back as a JS Date (pg's default) and callers
 *   convert it to ISO-8601; int8 comes back as a string (pg's default), so bigint ids stay exact.
 */
import { createHash } from 'node:crypto';
import type { ClientConfig, Pool as PgPool, PoolClient, PoolConfig } from 'pg';
import { IsolatedClient, Pool } from '../vendor';
import { resolveEndpoint, toPgSsl, type SslMode } from './endpoint';
import { quoteSchema } from './identifiers';
import { DEFAULTS } from './bounds';

export type { SslMode };

/** What a credential provides. Either `connectionString` or host/port/database/user/password. */
export interface ConnectionConfig {
	connectionString?: string;
	host?: string;
	port?: number;
	database?: string;
	user?: string;
	password?: string;
	/**
	 * The credential's SSL mode (libpq's names). A connection string's sslmode/ssl can only make it
	 * stricter (see endpoint.ts). `require` encrypts without checking the certificate; `verify-ca`
	 * checks the chain against `ca`; `verify-full` also checks the host name.
	 */
	ssl?: SslMode;
	/** PEM CA certificate(s) for `verify-ca` / `verify-full`; empty means the system's trusted CAs. */
	ca?: string;
	/** Schema holding the ledger and queue tables (validated by quoteSchema). */
	schema: string;
	/** Whether the nodes may apply schema/ migrations on first use. */
	autoApplySchema?: boolean;
	/** Upper bound of clients in this process's pool for this connection (1..100, default 5). */
	maxConnections?: number;
	/** Milliseconds to wait for a pool connection or a new connection's handshake (default 10000, src/db/bounds.ts). */
	connectTimeoutMs?: number;
	/** statement_timeout for each ledger batch transaction, ms (default 30000, src/db/bounds.ts). */
	statementTimeoutMs?: number;
	/** lock_timeout for each ledger batch transaction, ms (default 5000, src/db/bounds.ts). */
	lockTimeoutMs?: number;
}

const MAX_POOLS = 32;
const IDLE_CLIENT_MS = 10_000;
const IDLE_POOL_MS = 5 * 60_000;

interface Entry {
	pool: PgPool;
	lastUsed: number;
}
const pools = new Map<string, Entry>();
let sweeper: NodeJS.Timeout | undefined;

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
	];
	return createHash('sha256').update(JSON.stringify(identity)).digest('hex');
}

/**
 * Translates a ConnectionConfig into pg's PoolConfig: every connection parameter explicit (see
 * endpoint.ts), so pg never falls back to PG* environment variables or ~/.pgpass. The password is
 * given as a function, which makes pg send exactly it (an empty one included) and skip ~/.pgpass.
 * Throws EndpointError when the credential is incomplete or its connection string is refused.
 */
export function toPgConfig(cfg: ConnectionConfig): PoolConfig {
	const e = resolveEndpoint(cfg);
	const max = Math.min(Math.max(Math.trunc(cfg.maxConnections ?? 5), 1), 100);
	const password = e.password;
	return {
		max,
		idleTimeoutMillis: IDLE_CLIENT_MS,
		connectionTimeoutMillis: cfg.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
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

function startSweeper(): void {
	if (sweeper) return;
	sweeper = setInterval(() => {
		const now = Date.now();
		for (const [key, entry] of pools) {
			if (now - entry.lastUsed > IDLE_POOL_MS && entry.pool.waitingCount === 0 && entry.pool.idleCount === entry.pool.totalCount) {
				pools.delete(key);
				void entry.pool.end().catch(() => undefined);
			}
		}
		if (pools.size === 0 && sweeper) {
			clearInterval(sweeper);
			sweeper = undefined;
		}
	}, 30_000);
	sweeper.unref();
}

/** Returns the process-wide pool for this connection, creating it on first use. */
export function getPool(cfg: ConnectionConfig): PgPool {
	quoteSchema(cfg.schema);
	const key = poolKey(cfg);
	const found = pools.get(key);
	if (found) {
		found.lastUsed = Date.now();
		return found.pool;
	}
	if (pools.size >= MAX_POOLS) {
		let oldest: [string, Entry] | undefined;
		for (const e of pools) if (!oldest || e[1].lastUsed < oldest[1].lastUsed) oldest = e;
		if (oldest) {
			pools.delete(oldest[0]);
			void oldest[1].pool.end().catch(() => undefined);
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
	pools.set(key, { pool, lastUsed: Date.now() });
	startSweeper();
	return pool;
}

/** Checks out a client, runs `fn`, and returns the client (destroying it if `fn` threw a connection error). */
export async function withClient<T>(pool: PgPool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
	const client = await pool.connect();
	let broken: Error | undefined;
	// While checked out, a killed backend emits 'error' on the client (pg-pool listens only while it
	// is idle): without this listener that would end the process. The query in flight rejects too.
	const onError = (e: Error) => {
		broken = e;
	};
	client.on('error', onError);
	try {
		return await fn(client);
	} catch (e) {
		if (isConnectionError(e)) broken = e as Error;
		throw e;
	} finally {
		client.removeListener('error', onError);
		client.release(broken);
	}
}

/** True for errors after which the connection must not be reused. */
export function isConnectionError(e: unknown): boolean {
	const err = e as { code?: string; message?: string };
	if (!err) return false;
	if (err.code && /^(08|57P0)/.test(err.code)) return true;
	return /Connection terminated|ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|timeout/i.test(err.message ?? '');
}

/** Ends every pool (tests and process shutdown). */
export async function closeAllPools(): Promise<void> {
	const all = [...pools.values()];
	pools.clear();
	if (sweeper) {
		clearInterval(sweeper);
		sweeper = undefined;
	}
	await Promise.all(all.map((e) => e.pool.end().catch(() => undefined)));
}

/** Number of pools currently open in this process (diagnostics and tests). */
export function openPoolCount(): number {
	return pools.size;
}
