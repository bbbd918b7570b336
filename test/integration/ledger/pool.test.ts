import { closeAllPools, getPool, openPoolCount, toPgConfig } from '../../../src/db/pool';
import { DATABASE_URL } from '../../helpers/db';

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

	it('closes idle connections (10 s) and never keeps the process alive', () => {
		const c = toPgConfig(cfg());
		expect(c).toMatchObject({ idleTimeoutMillis: 10_000, allowExitOnIdle: true, max: 5, ssl: false });
	});

	it('bounds the number of pools: the least recently used one is closed', async () => {
		const first = getPool(cfg({ maxConnections: 1 }));
		await first.query('SELECT 1');
		for (let i = 2; i <= 40; i++) getPool(cfg({ maxConnections: i }));
		expect(openPoolCount()).toBe(32);
		expect(first.ended).toBe(true);
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

	it('rejects an unsafe schema name before creating a pool', () => {
		expect(() => getPool(cfg({ schema: 'bad"name' }))).toThrow(/Invalid schema name/);
		expect(openPoolCount()).toBe(0);
	});
});
