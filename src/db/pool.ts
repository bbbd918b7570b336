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
import type { Pool as PgPool, PoolClient, PoolConfig } from 'pg';
import { Pool } from '../vendor';
import { quoteSchema } from './identifiers';
import { DEFAULTS } from './bounds';

export type SslMode = 'disable' | 'require' | 'verify-full';

/** What a credential provides. Either `connectionString` or host/port/database/user/password. */
export interface ConnectionConfig {
	connectionString?: string;
	host?: string;
	port?: number;
	database?: string;
	user?: string;
	password?: string;
	/** `require` encrypts without checking the certificate; `verify-full` checks it against `ca`. */
	ssl?: SslMode;
	/** PEM CA certificate(s) for `verify-full`; empty means the system's trusted CAs. */
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

/** Translates a ConnectionConfig into pg's PoolConfig. */
export function toPgConfig(cfg: ConnectionConfig): PoolConfig {
	const max = Math.min(Math.max(Math.trunc(cfg.maxConnections ?? 5), 1), 100);
	const base: PoolConfig = {
		max,
		idleTimeoutMillis: IDLE_CLIENT_MS,
		connectionTimeoutMillis: cfg.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
		allowExitOnIdle: true,
		application_name: 'n8n-nodes-operation-ledger',
	};
	if (cfg.connectionString) {
		// sslmode inside the string would override our ssl object in pg; the credential's SSL field wins.
		const url = stripSslParams(cfg.connectionString);
		base.connectionString = url;
	} else {
		Object.assign(base, {
			host: cfg.host || '127.0.0.1',
			port: cfg.port || 5432,
			database: cfg.database,
			user: cfg.user,
			password: cfg.password,
		});
	}
	if (cfg.ssl === 'require') base.ssl = { rejectUnauthorized: false };
	else if (cfg.ssl === 'verify-full') base.ssl = { rejectUnauthorized: true, ca: cfg.ca || undefined };
	else base.ssl = false;
	return base;
}

function stripSslParams(connectionString: string): string {
	try {
		const url = new URL(connectionString);
		for (const p of ['sslmode', 'ssl', 'sslrootcert', 'sslcert', 'sslkey']) url.searchParams.delete(p);
		return url.toString();
	} catch {
		return connectionString;
	}
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
	pools.set(key, { pool, lastUsed: Date.now() });
	startSweeper();
	return pool;
}

/** Checks out a client, runs `fn`, and returns the client (destroying it if `fn` threw a connection error). */
export async function withClient<T>(pool: PgPool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
	const client = await pool.connect();
	let broken: Error | undefined;
	try {
		return await fn(client);
	} catch (e) {
		if (isConnectionError(e)) broken = e as Error;
		throw e;
	} finally {
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
