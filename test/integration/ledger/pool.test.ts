import { acquirePool, closeAllPools, getPool, leaseCount, openPoolCount, poolCounters, toPgConfig } from '../../../src/db/pool';
import { Client } from 'pg';
import * as poolModule from '../../../src/db/pool';
import { InvalidSchemaNameError } from '../../../src/db/identifiers';
import { openLedgerConnection } from '../../../nodes/shared/connection';
import { DATABASE_URL } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

afterEach(async () => {
	await closeAllPools();
});

const cfg = (extra: Record<string, unknown> = {}) => ({ connectionString: DATABASE_URL, schema: 'operation_ledger', ...extra });

describe('connection pools', () => {
	it('keeps one pool per credential across executions, bounded per pool', async () => {
		const a = getPool(cfg({ maxConnections: 3 }));
		const b = getPool(cfg({ maxConnections: 3 }));
		expect(a).toBe(b);
		// 10 concurrent queries never open more than 3 connections.
		await Promise.all(Array.from({ length: 10 }, () => a.query('SELECT pg_sleep(0.05)')));
		expect(a.totalCount).toBeLessThanOrEqual(3);
		expect(getPool(cfg({ maxConnections: 4 }))).not.toBe(a);
		// The schema is not part of the connection: two schemas on one server share a pool.
		expect(getPool(cfg({ maxConnections: 3, schema: 'other_schema' }))).toBe(a);
	});

	it('is configured to close idle connections after 10 s and never keep the process alive', () => {
		const c = toPgConfig(cfg());
		expect(c).toMatchObject({ idleTimeoutMillis: 10_000, allowExitOnIdle: true, max: 5, ssl: false });
	});

	it('closes idle connections: their backends leave pg_stat_activity once idle past the timeout', async () => {
		process.env.OPERATION_LEDGER_IDLE_CLIENT_MS = '300';
		const observer = new Client({ connectionString: DATABASE_URL });
		await observer.connect();
		try {
			const lease = acquirePool(cfg({ maxConnections: 3, connectTimeoutMs: 5000 }));
			// Three connections at once (each holds its backend while pg_sleep runs).
			const pids = (await Promise.all([1, 2, 3].map(() => lease.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.1)')))).map((r) => r.rows[0].pid);
			expect(new Set(pids).size).toBe(3);
			const alive = async () =>
				(await observer.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pids])).rows[0].n;
			expect(await alive()).toBe('3');
			// The state that shows the close: the backends are gone.
			await waitFor(async () => (await alive()) === '0', { what: 'the closed pool\'s backends to end', timeoutMs: 10_000 });
			expect(await alive()).toBe('0');
			expect(lease.pool.totalCount).toBe(0);
			lease.release();
		} finally {
			delete process.env.OPERATION_LEDGER_IDLE_CLIENT_MS;
			await observer.end();
		}
	});

	it('bounds the number of pools: the least recently used one without leases is closed', async () => {
		const first = acquirePool(cfg({ maxConnections: 1 }));
		await first.pool.query('SELECT 1');
		first.release();
		const held = acquirePool(cfg({ maxConnections: 2 }));
		for (let i = 3; i <= 40; i++) acquirePool(cfg({ maxConnections: i })).release();
		expect(openPoolCount()).toBe(32);
		expect(first.pool.ended).toBe(true);
		// The leased pool was never the one closed, though it is the oldest but one.
		expect(held.pool.ended).toBe(false);
		await expect(held.pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
		held.release();
		held.release(); // idempotent
		expect(leaseCount(cfg({ maxConnections: 2 }))).toBe(0);
	});

	it('a pool evicted while every pool is leased ends only when its last lease is released', async () => {
		process.env.OPERATION_LEDGER_MAX_POOLS = '3';
		try {
			const leases = [1, 2, 3].map((i) => acquirePool(cfg({ maxConnections: i })));
			const deferred = poolCounters.deferredEnds;
			const fourth = acquirePool(cfg({ maxConnections: 4 }));
			expect(openPoolCount()).toBe(3);
			expect(poolCounters.deferredEnds).toBe(deferred + 1);
			// The evicted pool (the first) still serves its holder.
			expect(leases[0].pool.ended).toBe(false);
			await expect(leases[0].pool.query('SELECT 2 AS two')).resolves.toMatchObject({ rows: [{ two: 2 }] });
			leases[0].release();
			expect(leases[0].pool.ended).toBe(true);
			for (const l of [...leases.slice(1), fourth]) l.release();
		} finally {
			delete process.env.OPERATION_LEDGER_MAX_POOLS;
		}
	});

	it('an execution that holds a client keeps working when its pool is evicted mid-run; the handle then uses a new pool', async () => {
		process.env.OPERATION_LEDGER_MAX_POOLS = '2';
		try {
			const h = getPool(cfg({ maxConnections: 1 }));
			const client = await h.connect();
			await client.query('BEGIN');
			// Two other credentials are used meanwhile: the map holds 2, so h's pool is evicted.
			for (const i of [2, 3]) await getPool(cfg({ maxConnections: i })).query('SELECT 1');
			expect(openPoolCount()).toBe(2);
			const r = await client.query('SELECT 3 AS three');
			expect(r.rows).toEqual([{ three: 3 }]);
			await client.query('COMMIT');
			client.release();
			// Its next statement (as the next execution's) gets a fresh pool instead of an ended one.
			await expect(h.query('SELECT 4 AS four')).resolves.toMatchObject({ rows: [{ four: 4 }] });
			expect(leaseCount(cfg({ maxConnections: 1 }))).toBe(0);
		} finally {
			delete process.env.OPERATION_LEDGER_MAX_POOLS;
		}
	});

	it('the idle sweeper (timeouts shortened by env) skips leased pools and ends unleased idle ones', async () => {
		process.env.OPERATION_LEDGER_POOL_IDLE_MS = '150';
		process.env.OPERATION_LEDGER_POOL_SWEEP_MS = '50';
		try {
			const held = acquirePool(cfg({ maxConnections: 7 }));
			const idle = acquirePool(cfg({ maxConnections: 8 }));
			idle.release();
			// The sweep that ended the idle pool passed the held one, idle just as long: it skipped it.
			await waitFor(() => idle.pool.ended, { what: 'the sweeper to end the unleased idle pool', timeoutMs: 5000 });
			expect(held.pool.ended).toBe(false);
			await expect(held.pool.query('SELECT 5 AS five')).resolves.toMatchObject({ rows: [{ five: 5 }] });
			held.release();
			await waitFor(() => held.pool.ended, { what: 'the sweeper to end the released pool', timeoutMs: 5000 });
			expect(openPoolCount()).toBe(0);
			// The handle outlives sweeps: its next query opens a new pool.
			await expect(getPool(cfg({ maxConnections: 7 })).query('SELECT 6 AS six')).resolves.toMatchObject({ rows: [{ six: 6 }] });
		} finally {
			delete process.env.OPERATION_LEDGER_POOL_IDLE_MS;
			delete process.env.OPERATION_LEDGER_POOL_SWEEP_MS;
		}
	});

	it('without env the defaults are the production values (5 min idle, 30 s sweep, 32 pools)', () => {
		expect(process.env.OPERATION_LEDGER_POOL_IDLE_MS).toBeUndefined();
		const src = require('node:fs').readFileSync(require.resolve('../../../src/db/pool.ts'), 'utf8') as string;
		expect(src).toMatch(/OPERATION_LEDGER_POOL_IDLE_MS', 5 \* 60_000\)/);
		expect(src).toMatch(/OPERATION_LEDGER_POOL_SWEEP_MS', 30_000\)/);
		expect(src).toMatch(/OPERATION_LEDGER_MAX_POOLS', 32\)/);
	});

	it('maps SSL modes without touching global pg settings', () => {
		expect(toPgConfig(cfg({ ssl: 'require' })).ssl).toEqual({ rejectUnauthorized: false });
		expect(toPgConfig(cfg({ ssl: 'verify-full', ca: 'PEM' })).ssl).toEqual({ rejectUnauthorized: true, ca: 'PEM' });
		// The URL is parsed (never handed to pg); its sslmode can only make the SSL field stricter.
		const fromUrl = toPgConfig(cfg({ connectionString: 'postgres://u@h:5432/d?sslmode=require&application_name=x', ssl: 'disable' }));
		expect(fromUrl.connectionString).toBeUndefined();
		expect(fromUrl).toMatchObject({ host: 'h', port: 5432, database: 'd', user: 'u', ssl: { rejectUnauthorized: false } });
		expect(toPgConfig(cfg({ connectionString: 'postgres://u@h:5432/d?sslmode=disable', ssl: 'verify-full' })).ssl).toEqual({ rejectUnauthorized: true });
	});

	it('the door (openLedgerConnection) rejects an unsafe schema name before taking a pool; the pool does not check it again', async () => {
		const take = jest.spyOn(poolModule, 'getPool');
		try {
			await expect(openLedgerConnection(cfg({ schema: 'bad"name' }))).rejects.toBeInstanceOf(InvalidSchemaNameError);
			expect(take).not.toHaveBeenCalled();
			expect(openPoolCount()).toBe(0);
		} finally {
			take.mockRestore();
		}
	});
});
