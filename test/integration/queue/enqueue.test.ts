/**
 * Enqueue: batched and transactional (a rolled-back enqueue is never dequeued and wakes nobody),
 * dedupe returns the existing live task, not-before/delay, notification on commit.
 */
import type { Client, Notification } from 'pg';
import { complete, dequeue, enqueue, queueChannel } from '../../../src/queue';
import { drainNotifications, queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
afterAll(async () => {
	await db.drop();
});

async function listen(queue: string): Promise<{ client: Client; got: Notification[] }> {
	const client = await db.client();
	const got: Notification[] = [];
	client.on('notification', (n) => got.push(n));
	await client.query(`LISTEN ${queueChannel(db.ledgerSchema, queue)}`);
	return { client, got };
}

describe('enqueue', () => {
	test('a rolled-back enqueue is never dequeued and sends no wake-up', async () => {
		const queue = db.queueName('rollback');
		const { got } = await listen(queue);
		const tx = await db.pool.connect();
		try {
			await tx.query('BEGIN');
			const out = await enqueue(tx, db.ledgerSchema, [
				{ queue, group: 'high', payload: { a: 1 } },
				{ queue, group: 'low', payload: { a: 2 } },
			]);
			expect(out).toHaveLength(2);
			// Not visible to a consumer while uncommitted...
			expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 })).toHaveLength(0);
			await tx.query('ROLLBACK');
		} finally {
			tx.release();
		}
		// ...nor after the rollback.
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 })).toHaveLength(0);
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows[0].n).toBe(0);
		// Absence proven by a state: Postgres delivers notifications in commit order, so once a marker
		// notification committed after the rollback has arrived, a wake-up from the rolled-back
		// enqueue would have arrived before it.
		await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
		expect(got).toEqual([]);
	});

	test('a committed batch notifies the queue channel once, with the queue name as payload', async () => {
		const queue = db.queueName('notify');
		const { got } = await listen(queue);
		await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'high', payload: 1 },
			{ queue, group: 'normal', payload: 2 },
		]);
		await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
		expect(got).toHaveLength(1);
		expect(got[0].channel).toBe(queueChannel(db.ledgerSchema, queue));
		expect(got[0].payload).toBe(queue);
		// The database computes the same channel name.
		const { rows } = await db.pool.query(`SELECT "${db.schema}".queue_channel($1) AS c`, [queue]);
		expect(rows[0].c).toBe(queueChannel(db.ledgerSchema, queue));
	});

	test('a batch is all or nothing: one invalid row writes none', async () => {
		const queue = db.queueName('atomic');
		await expect(
			enqueue(db.pool, db.ledgerSchema, [
				{ queue, group: 'high', payload: {} },
				{ queue, group: 'x'.repeat(101), payload: {} },
			]),
		).rejects.toThrow(/at most 100 bytes/);
		// A raw call past the node's checks (max attempts 0): refused for the whole batch (the function
		// checks what the node checks), nothing written.
		await expect(
			db.pool.query(`SELECT * FROM "${db.schema}".queue_enqueue($1::jsonb)`, [
				JSON.stringify([
					{ i: 0, q: queue, g: 'high', p: {} },
					{ i: 1, q: queue, g: 'high', p: {}, m: 0 },
				]),
			]),
		).rejects.toThrow(/item 1: max attempts must be a whole number from 1 to 1000, got 0/);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 })).toHaveLength(0);
	});

	test('dedupe returns the existing live task and writes nothing', async () => {
		const queue = db.queueName('dedupe');
		const [first] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', payload: { v: 1 }, dedupeKey: 'order-7' }]);
		expect(first.deduplicated).toBe(false);
		const again = await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'order-7' },
			{ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'order-8' },
			{ queue, group: 'high', payload: { v: 4 }, dedupeKey: 'order-8' },
		]);
		expect(again[0]).toMatchObject({ taskId: first.taskId, deduplicated: true, group: 'normal', payload: { v: 1 } });
		expect(again[1].deduplicated).toBe(false);
		expect(again[2]).toMatchObject({ taskId: again[1].taskId, deduplicated: true, payload: { v: 3 } });
		// Still live while processing.
		const [claimed] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, groups: [{ name: 'high', weight: 5 }] });
		expect(claimed.taskId).toBe(again[1].taskId); // only high listed
		const [whileHeld] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'order-8' }]);
		expect(whileHeld).toMatchObject({ taskId: claimed.taskId, deduplicated: true, status: 'processing' });
		// Once finished, the key is free again.
		await complete(db.pool, db.ledgerSchema, [claimed]);
		const [fresh] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'order-8' }]);
		expect(fresh.deduplicated).toBe(false);
		expect(fresh.taskId).not.toBe(claimed.taskId);
	});

	test('concurrent enqueues of one dedupe key create exactly one task', async () => {
		const queue = db.queueName('dedupe-race');
		const results = await Promise.all(
			Array.from({ length: 8 }, (_, i) => enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', payload: { i }, dedupeKey: 'same' }])),
		);
		const ids = new Set(results.map((r) => r[0].taskId));
		expect(ids.size).toBe(1);
		expect(results.filter((r) => !r[0].deduplicated)).toHaveLength(1);
	});

	test('a mixed batch: keyless items in one insert, keyed items deduplicated exactly, results in input order', async () => {
		const queue = db.queueName('mixed');
		const [existing] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', payload: { v: 'old' }, dedupeKey: 'k-old' }]);
		const out = await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'high', payload: { v: 0 } },
			{ queue, group: 'normal', payload: { v: 1 }, dedupeKey: 'k-new' },
			{ queue, group: 'low', payload: { v: 2 } },
			{ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'k-old' },
			{ queue, group: 'high', payload: { v: 4 }, dedupeKey: 'k-new' },
			{ queue, group: 'normal', payload: { v: 5 }, delaySeconds: 600 },
			{ queue, group: 'normal', payload: { v: 6 }, maxAttempts: 2 },
		]);
		expect(out.map((t) => t.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
		expect(out.map((t) => t.deduplicated)).toEqual([false, false, false, true, true, false, false]);
		expect(out.map((t) => (t.payload as { v: unknown }).v)).toEqual([0, 1, 2, 'old', 1, 5, 6]);
		expect(out[3].taskId).toBe(existing.taskId);
		expect(out[4].taskId).toBe(out[1].taskId);
		expect(out[6].maxAttempts).toBe(2);
		expect(Date.parse(out[5].availableAt as string) - Date.parse(out[5].enqueuedAt)).toBeGreaterThanOrEqual(599_000);
		// Every returned row is the row stored under that id.
		const { rows } = await db.pool.query(`SELECT id::text, payload, priority_group FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		const byId = new Map(rows.map((r) => [r.id, r]));
		expect(byId.size).toBe(6);
		for (const t of out) expect(byId.get(t.taskId)).toMatchObject({ payload: t.payload, priority_group: t.group });
	});

	test('a mixed batch is all or nothing when a keyed item fails, and when a keyless one does', async () => {
		const queue = db.queueName('mixed-atomic');
		for (const bad of [
			{ i: 2, q: queue, g: 'high', p: {}, k: 'k2', m: 0 },
			{ i: 2, q: queue, g: 'high', p: {}, m: 0 },
		]) {
			await expect(
				db.pool.query(`SELECT * FROM "${db.schema}".queue_enqueue($1::jsonb)`, [
					JSON.stringify([{ i: 0, q: queue, g: 'high', p: {} }, { i: 1, q: queue, g: 'high', p: {}, k: 'k1' }, bad]),
				]),
			).rejects.toThrow(/item 2: max attempts must be a whole number/);
		}
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows[0].n).toBe(0);
	});

	test('concurrent mixed batches sharing dedupe keys: one task per key, every keyless item written', async () => {
		const queue = db.queueName('mixed-race');
		const results = await Promise.all(
			Array.from({ length: 8 }, (_, b) =>
				enqueue(db.pool, db.ledgerSchema, [
					{ queue, group: 'low', payload: { b }, dedupeKey: 'shared-b' },
					{ queue, group: 'high', payload: { b } },
					{ queue, group: 'low', payload: { b }, dedupeKey: 'shared-a' },
				]),
			),
		);
		for (const k of [0, 2]) {
			expect(new Set(results.map((r) => r[k].taskId)).size).toBe(1);
			expect(results.filter((r) => !r[k].deduplicated)).toHaveLength(1);
		}
		expect(new Set(results.map((r) => r[1].taskId)).size).toBe(8);
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows[0].n).toBe(10);
	});

	test('the notification says whether ready work was added: the queue name, or empty for delayed tasks only', async () => {
		const queue = db.queueName('notify-delayed');
		const { got } = await listen(queue);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', delaySeconds: 3600 }, { queue, group: 'low', dedupeKey: 'later', delaySeconds: 60 }]);
		await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
		expect(got.map((n) => n.payload)).toEqual(['']);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', delaySeconds: 3600 }, { queue, group: 'low', dedupeKey: 'now' }]);
		await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
		expect(got.map((n) => n.payload)).toEqual(['', queue]);
	});

	test('delay and not-before: the later wins; results come back in input order', async () => {
		const queue = db.queueName('delay');
		const soon = new Date(Date.now() + 3_600_000).toISOString();
		const out = await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'low', payload: 'a', delaySeconds: 120 },
			{ queue, group: 'low', payload: 'b', notBefore: soon, delaySeconds: 10 },
			{ queue, group: 'low', payload: 'c' },
		]);
		expect(out.map((t) => t.payload)).toEqual(['a', 'b', 'c']);
		expect(out.map((t) => t.index)).toEqual([0, 1, 2]);
		const enqueued = Date.parse(out[0].enqueuedAt);
		expect(Date.parse(out[0].availableAt as string) - enqueued).toBeGreaterThanOrEqual(119_000);
		expect(Date.parse(out[1].availableAt as string)).toBe(Date.parse(soon));
		expect(out[2].availableAt).toBe(out[2].enqueuedAt);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
		expect(got.map((t) => t.payload)).toEqual(['c']);
	});
});
