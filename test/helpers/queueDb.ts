/**
 * Integration-test database for the queue: a pool on the test database and a freshly migrated
 * random schema (q_test_<hex>) per test file, dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { enqueue, type EnqueueInput } from '../../src/queue';

export const QUEUE_DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

export interface QueueTestDb {
	pool: Pool;
	schema: string;
	/** A fresh queue name, so the scheduler state of one test never leaks into another. */
	queueName(prefix?: string): string;
	/** Enqueues `n` tasks of one group in batches of 1000; payload {n: i}. Returns ids in order. */
	fill(queue: string, group: string, n: number, extra?: Partial<EnqueueInput>): Promise<string[]>;
	/** A dedicated client (for LISTEN or explicit transactions); closed by drop(). */
	client(): Promise<Client>;
	drop(): Promise<void>;
}

export async function queueTestDb(max = 10): Promise<QueueTestDb> {
	const pool = new Pool({ connectionString: QUEUE_DATABASE_URL, max });
	const schema = `q_test_${randomBytes(5).toString('hex')}`;
	await migrate(pool, schema, true);
	const clients: Client[] = [];
	let seq = 0;
	return {
		pool,
		schema,
		queueName: (prefix = 'q') => `${prefix}-${++seq}-${randomBytes(3).toString('hex')}`,
		async fill(queue, group, n, extra = {}) {
			const ids: string[] = [];
			for (let start = 0; start < n; start += 1000) {
				const batch: EnqueueInput[] = [];
				for (let i = start; i < Math.min(n, start + 1000); i++) batch.push({ queue, group, payload: { n: i }, ...extra });
				const out = await enqueue(pool, schema, batch);
				ids.push(...out.map((t) => t.taskId));
			}
			return ids;
		},
		async client() {
			const c = new Client({ connectionString: QUEUE_DATABASE_URL });
			await c.connect();
			clients.push(c);
			return c;
		},
		async drop() {
			await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
			await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			await pool.end();
		},
	};
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
