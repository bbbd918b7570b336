/**
 * Stats and the due check: depth per group, oldest wait, in flight, dead; when work is next due.
 */
import { complete, dequeue, enqueue, nextDue, stats } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
afterAll(async () => {
	await db.drop();
});

describe('stats', () => {
	test('depth per group, oldest wait, in flight, dead, succeeded', async () => {
		const queue = db.queueName('stats');
		expect(await stats(db.pool, db.ledgerSchema, queue)).toMatchObject({ groups: [], depth: 0, dead: 0, oldestWaitSeconds: 0 });
		const high = await db.fill(queue, 'high', 4);
		await db.fill(queue, 'low', 3);
		await db.fill(queue, 'low', 2, { delaySeconds: 600 });
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '90 seconds' WHERE id = $1`, [high[0]]);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 2, leaseSeconds: 60, groups: [{ name: 'high', weight: 1 }] });
		await complete(db.pool, db.ledgerSchema, [got[0]]);
		const s = await stats(db.pool, db.ledgerSchema, queue);
		expect(s.groups.map((g) => g.group)).toEqual(['high', 'low']);
		expect(s.groups[0]).toMatchObject({ ready: 2, delayed: 0, inFlight: 1, dead: 0, succeededLastHour: 1 });
		expect(s.groups[1]).toMatchObject({ ready: 3, delayed: 2, inFlight: 0, dead: 0 });
		expect(s).toMatchObject({ depth: 7, ready: 5, delayed: 2, inFlight: 1, succeededLastHour: 1 });
		expect(s.oldestWaitSeconds).toBeGreaterThanOrEqual(0);
		expect(s.oldestWaitSeconds).toBeLessThan(90);
		expect(typeof s.measuredAt).toBe('string');
	});

	test('next due: now when ready, the not-before time when only delayed work waits, null when empty', async () => {
		const queue = db.queueName('due');
		expect(await nextDue(db.pool, db.ledgerSchema, queue)).toEqual({ dueAt: null, due: false, inMs: null });
		const [later] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', delaySeconds: 300 }]);
		const d1 = await nextDue(db.pool, db.ledgerSchema, queue);
		expect(d1.due).toBe(false);
		expect(d1.dueAt).toBe(later.availableAt);
		expect(d1.inMs).toBeGreaterThan(290_000);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'zzz', payload: {} }]);
		expect((await nextDue(db.pool, db.ledgerSchema, queue)).due).toBe(true);
	});
});
