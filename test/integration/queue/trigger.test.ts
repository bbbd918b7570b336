/**
 * The trigger's engine against real Postgres: a committed enqueue wakes a listening watcher, a
 * rolled-back one does not; polling alone (LISTEN off, as behind PgBouncer) finds work; two
 * watchers claiming from one queue never hand out a task twice.
 */
import { connectListener } from '../../../src/queue/listen';
import { QueueWatcher, type WatcherDeps } from '../../../src/queue/watcher';
import { complete, dequeue, enqueue, nextDue, queueChannel, type ClaimedTask } from '../../../src/queue';
import { QUEUE_DATABASE_URL, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

let db: QueueTestDb;
const watchers: QueueWatcher[] = [];
beforeAll(async () => {
	db = await queueTestDb();
});
afterEach(async () => {
	await Promise.all(watchers.splice(0).map((w) => w.close()));
});
afterAll(async () => {
	await db.drop();
});

const config = () => ({ connectionString: QUEUE_DATABASE_URL, schema: db.schema });

function watcher(queue: string, over: Partial<WatcherDeps>): QueueWatcher {
	const w = new QueueWatcher({
		channel: queueChannel(db.ledgerSchema, queue),
		pollMs: 600_000,
		maxInFlight: 1,
		inFlightTimeoutMs: 60_000,
		check: () => nextDue(db.pool, db.ledgerSchema, queue),
		fire: async () => ({ finished: Promise.resolve() }),
		connect: () => connectListener(config()),
		...over,
	});
	watchers.push(w);
	return w;
}

describe('trigger engine on Postgres', () => {
	test('a committed enqueue wakes the listener; a rolled-back one does not', async () => {
		const queue = db.queueName('wake');
		const reasons: string[] = [];
		const w = watcher(queue, {
			fire: async (reason) => {
				reasons.push(reason);
				await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
				return { finished: Promise.resolve() };
			},
		});
		await w.start();
		expect(w.listening).toBe(true);
		const tx = await db.pool.connect();
		await tx.query('BEGIN');
		await enqueue(tx, db.ledgerSchema, [{ queue, group: 'high' }]);
		await tx.query('ROLLBACK');
		tx.release();
		// Postgres delivers notifications in commit order: when the committed enqueue's arrives, a
		// notification of the rolled-back one would have arrived before it. Exactly one came.
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high' }]);
		await waitFor(() => reasons.length > 0, { what: 'the committed enqueue\'s notification' });
		expect(w.counters.notifications).toBe(1);
		expect(reasons).toEqual(['notify']);
	});

	test('with LISTEN/NOTIFY off, polling alone finds the work', async () => {
		const queue = db.queueName('poll');
		const reasons: string[] = [];
		const w = watcher(queue, {
			connect: undefined,
			pollMs: 100,
			fire: async (reason) => {
				reasons.push(reason);
				await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
				return { finished: Promise.resolve() };
			},
		});
		await w.start();
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low' }]);
		await waitFor(() => reasons.length > 0, { what: 'reasons.length > 0' });
		expect(reasons).toEqual(['poll']);
		expect(w.counters.notifications).toBe(0);
	});

	test('a killed LISTEN connection is reopened and the queue checked again', async () => {
		const queue = db.queueName('reconnect');
		const reasons: string[] = [];
		const w = watcher(queue, {
			reconnectBaseMs: 50,
			reconnectCapMs: 100,
			fire: async (reason) => {
				reasons.push(reason);
				await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
				return { finished: Promise.resolve() };
			},
		});
		await w.start();
		await db.pool.query(
			`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'n8n-nodes-operation-ledger:listen' AND query LIKE $1`,
			[`LISTEN ${queueChannel(db.ledgerSchema, queue)}%`],
		);
		await waitFor(() => w.counters.lost > 0, { what: 'w.counters.lost > 0' });
		// Work arrives while the connection is down; its notification goes nowhere.
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal' }]);
		await waitFor(() => reasons.length > 0, { what: 'reasons.length > 0' });
		expect(w.counters.connects).toBe(2);
		expect(reasons[0]).toMatch(/reconnect|notify/);
	});

	test('claim mode: a notification claims at once; a delayed-only enqueue claims nothing and arms the due time', async () => {
		const queue = db.queueName('claim-first');
		const emitted: ClaimedTask[] = [];
		const w = watcher(queue, {
			claimFirst: true,
			pollMs: 600_000,
			fire: async () => {
				const tasks = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 60 });
				if (tasks.length === 0) return undefined;
				emitted.push(...tasks);
				return { finished: complete(db.pool, db.ledgerSchema, tasks) };
			},
		});
		await w.start();
		await waitFor(() => w.counters.checks > 0, { what: 'w.counters.checks > 0' });
		const checks = w.counters.checks;
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { n: 1 } }]);
		await waitFor(() => emitted.length > 0, { what: 'emitted.length > 0' });
		expect(emitted.map((t) => t.payload)).toEqual([{ n: 1 }]);
		// A task due in one second, announced by an empty-payload notification: not claimed early,
		// claimed at its time (the poll interval is ten minutes, so the due time armed the timer).
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', payload: { n: 2 }, delaySeconds: 1 }]);
		await waitFor(() => w.counters.notifications >= 2, { what: 'w.counters.notifications >= 2' });
		await waitFor(() => emitted.length > 1, { what: 'emitted.length > 1', timeoutMs: 10_000 });
		expect(emitted.map((t) => t.payload)).toEqual([{ n: 1 }, { n: 2 }]);
		expect(Date.parse(emitted[1].leaseExpiresAt) - 60_000).toBeGreaterThanOrEqual(Date.parse(emitted[1].availableAt));
		expect(w.counters.checks).toBeGreaterThan(checks);
	});

	test('two claiming watchers on one queue never hand out a task twice', async () => {
		const queue = db.queueName('claimers');
		const emitted: ClaimedTask[] = [];
		const claimer = () =>
			watcher(queue, {
				maxInFlight: 2,
				pollMs: 100,
				fire: async () => {
					const tasks = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 7, leaseSeconds: 60 });
					if (tasks.length === 0) return undefined;
					emitted.push(...tasks);
					return { finished: complete(db.pool, db.ledgerSchema, tasks) };
				},
			});
		await Promise.all([claimer().start(), claimer().start()]);
		for (let i = 0; i < 10; i++) await db.fill(queue, ['high', 'normal', 'low'][i % 3], 30);
		await waitFor(() => emitted.length >= 300, { what: 'emitted.length >= 300', timeoutMs: 15_000 });
		expect(emitted).toHaveLength(300);
		expect(new Set(emitted.map((t) => t.taskId)).size).toBe(300);
	});
});
