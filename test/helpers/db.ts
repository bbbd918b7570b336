import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { ledgerSchema, type LedgerSchema } from '../../src/db/identifiers';
import { enqueue, type EnqueueInput } from '../../src/queue';
import { waitFor } from './wait';

export const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh schema name for one test file. */
export function randomSchema(prefix = 'ol_test'): string {
	return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** The same URL under the queue tests' older name. */
export const QUEUE_DATABASE_URL = DATABASE_URL;

/**
 * A pool on the test database plus a migrated schema of its own; drop() removes both. `schema` is
 * the name, `schemaSql` its quoted form for a test's own SQL text, `ledgerSchema` the value every
 * core function takes (made once, by ledgerSchema(), src/db/identifiers.ts).
 */
export async function testDatabase(opts: { max?: number; prefix?: string } = {}) {
	const pool = new Pool({ connectionString: DATABASE_URL, max: opts.max ?? 10 });
	const schema = ledgerSchema(randomSchema(opts.prefix));
	await migrate(pool, schema, true);
	return {
		pool,
		schema: schema.name,
		schemaSql: schema.sql,
		ledgerSchema: schema,
		async drop() {
			await pool.query(`DROP SCHEMA IF EXISTS ${schema.sql} CASCADE`);
			await pool.end();
		},
	};
}

/**
 * Moves the ledger's clock (ledger_now(), see schema/functions/ledger/ledger_now.sql) of one test
 * schema by `offsetSeconds` from the real now(); 0 puts it back. Needs the schema owner's rights,
 * as the tests have. Lets tests pass settle windows, leases and backoffs without sleeping.
 */
export async function setLedgerClock(pool: Pick<Pool, 'query'>, schema: string, offsetSeconds: number): Promise<void> {
	const secs = Number(offsetSeconds);
	if (!Number.isFinite(secs)) throw new Error('offset must be a number');
	await pool.query(
		`CREATE OR REPLACE FUNCTION "${schema}".ledger_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() + make_interval(secs => ${secs}) $$`,
	);
}

/**
 * Stops the ledger's clock of one test schema at `at` (ledger_now() returns exactly that until it
 * is moved again; setLedgerClock(.., 0) puts the real clock back). Lets a test compare times the
 * ledger stored to the microsecond, whichever path stored them.
 */
export async function fixLedgerClock(pool: Pick<Pool, 'query'>, schema: string, at: Date): Promise<void> {
	const ms = at.getTime();
	if (!Number.isFinite(ms)) throw new Error('at must be a valid Date');
	await pool.query(
		`CREATE OR REPLACE FUNCTION "${schema}".ledger_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT '${at.toISOString()}'::timestamptz $$`,
	);
}

/** The queue clock's offset per schema, as setQueueClock last set it (0 when never moved). */
const queueClockOffsets = new Map<string, number>();

/**
 * Sets the queue's clock (queue_now(), see schema/functions/queue/queue_now.sql) of one test
 * schema to the real now() plus `offsetSeconds`; 0 puts it back. The clock is the schema's, so it
 * moves every queue of the schema: tests that move it put it back (afterEach). Needs the schema
 * owner's rights, as the tests have. Every queue function reads this clock, so moving it passes
 * delays, leases, backoffs, aging intervals and purge ages without sleeping; plans that inlined
 * the old clock are invalidated by the replacement.
 */
export async function setQueueClock(pool: Pick<Pool, 'query'>, schema: string, offsetSeconds: number): Promise<void> {
	const secs = Number(offsetSeconds);
	if (!Number.isFinite(secs)) throw new Error('offset must be a number');
	// Like the shipped body: SQL, STABLE, no SET clause, so the planner still inlines it.
	await pool.query(
		`CREATE OR REPLACE FUNCTION "${schema}".queue_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() + make_interval(secs => ${secs}) $$`,
	);
	queueClockOffsets.set(schema, secs);
}

/** Moves the queue's clock of one test schema `seconds` further on from where setQueueClock left it. */
export async function advanceQueueClock(pool: Pick<Pool, 'query'>, schema: string, seconds: number): Promise<void> {
	await setQueueClock(pool, schema, (queueClockOffsets.get(schema) ?? 0) + seconds);
}

/** testDatabase() plus the queue tests' helpers. */
export interface QueueTestDb {
	pool: Pool;
	schema: string;
	/** The value the core functions take (testDatabase()). */
	ledgerSchema: LedgerSchema;
	/** A fresh queue name, so the scheduler state of one test never leaks into another. */
	queueName(prefix?: string): string;
	/** Enqueues `n` tasks of one group in batches of 1000; payload {n: i}. Returns ids in order. */
	fill(queue: string, group: string, n: number, extra?: Partial<EnqueueInput>): Promise<string[]>;
	/** A dedicated client (for LISTEN or explicit transactions); closed by drop(). */
	client(): Promise<Client>;
	drop(): Promise<void>;
}

/** One test database for ledger and queue tests alike: testDatabase() (schema q_test_<hex>) with queue helpers. */
export async function queueTestDb(max = 10): Promise<QueueTestDb> {
	const db = await testDatabase({ max, prefix: 'q_test' });
	const clients: Client[] = [];
	let seq = 0;
	return {
		pool: db.pool,
		schema: db.schema,
		ledgerSchema: db.ledgerSchema,
		queueName: (prefix = 'q') => `${prefix}-${++seq}-${randomBytes(3).toString('hex')}`,
		async fill(queue, group, n, extra = {}) {
			const ids: string[] = [];
			for (let start = 0; start < n; start += 1000) {
				const batch: EnqueueInput[] = [];
				for (let i = start; i < Math.min(n, start + 1000); i++) batch.push({ queue, group, payload: { n: i }, ...extra });
				const out = await enqueue(db.pool, db.ledgerSchema, batch);
				ids.push(...out.map((t) => t.taskId));
			}
			return ids;
		},
		async client() {
			const c = new Client({ connectionString: DATABASE_URL });
			await c.connect();
			clients.push(c);
			return c;
		},
		async drop() {
			await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
			await db.drop();
		},
	};
}

/** Real time passing, for tests that wait for something outside the database (prefer the database clock). */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Proves that no further notification is on its way to a listener, by a state instead of a sleep:
 * sends `marker` on `channel` and waits until `got` holds it. Postgres delivers a session's
 * notifications in the order their transactions committed, so every notification committed before
 * the marker has arrived by then. Removes the marker from `got` again.
 */
export async function drainNotifications(pool: Pick<Pool, 'query'>, channel: string, got: Array<{ payload?: string }>, marker = `marker-${randomBytes(4).toString('hex')}`): Promise<void> {
	await pool.query('SELECT pg_notify($1, $2)', [channel, marker]);
	await waitFor(() => got.some((n) => n.payload === marker), { what: `the marker notification on ${channel}` });
	got.splice(
		got.findIndex((n) => n.payload === marker),
		1,
	);
}
