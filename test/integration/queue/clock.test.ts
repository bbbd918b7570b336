/**
 * The queue's clock (queue_now(), schema/functions/queue/queue_now.sql): every queue function reads
 * it, so a test that moves it sees a delay pass, a lease run out, a backoff elapse and a dead task
 * age into the purge without sleeping, and what the queue stores and reports is on that clock.
 */
import { complete, dequeue, enqueue, fail, nextDue, purge, stats } from '../../../src/queue';
import { queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(4);
});
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await db.drop();
});

const HOUR = 3600;
const claimOne = (queue: string, leaseSeconds = 600) =>
	dequeue(db.pool, db.ledgerSchema, {
		queue,
		limit: 1,
		leaseSeconds,
		groups: [{ name: 'g', weight: 1 }],
	});

async function queueNow(): Promise<Date> {
	const { rows } = await db.pool.query<{ t: Date }>(`SELECT "${db.schema}".queue_now() AS t`);
	return rows[0].t;
}

describe('the queue clock', () => {
	test('unmoved, it is the database now(); moved, it is now() plus the offset', async () => {
		const { rows } = await db.pool.query<{ d: number }>(`SELECT extract(epoch FROM "${db.schema}".queue_now() - now())::float8 AS d`);
		expect(rows[0].d).toBe(0);
		await setQueueClock(db.pool, db.schema, 90);
		const moved = await db.pool.query<{ d: number }>(`SELECT extract(epoch FROM "${db.schema}".queue_now() - now())::float8 AS d`);
		expect(moved.rows[0].d).toBe(90);
	});

	test('a delayed task becomes due when the clock passes its delay, and nextDue and stats say so', async () => {
		const queue = db.queueName('delay');
		const [t] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'g', payload: {}, delaySeconds: HOUR }]);
		expect(await claimOne(queue)).toEqual([]);
		const before = await nextDue(db.pool, db.ledgerSchema, queue);
		expect(before.due).toBe(false);
		expect(before.inMs).toBeGreaterThan((HOUR - 60) * 1000);
		expect((await stats(db.pool, db.ledgerSchema, queue)).delayed).toBe(1);

		await setQueueClock(db.pool, db.schema, HOUR - 60);
		expect(await claimOne(queue)).toEqual([]); // a minute early: still delayed
		const close = await nextDue(db.pool, db.ledgerSchema, queue);
		expect(close.inMs).toBeGreaterThan(50_000);
		expect(close.inMs).toBeLessThanOrEqual(60_000);

		await setQueueClock(db.pool, db.schema, HOUR + 1);
		expect(await nextDue(db.pool, db.ledgerSchema, queue)).toMatchObject({
			due: true,
			inMs: 0,
		});
		const s = await stats(db.pool, db.ledgerSchema, queue);
		expect(s).toMatchObject({ ready: 1, delayed: 0 });
		const [got] = await claimOne(queue);
		expect(got.taskId).toBe(t.taskId);
		// The lease starts on the moved clock too.
		expect(new Date(got.leaseExpiresAt).getTime() - (await queueNow()).getTime()).toBeGreaterThan(590_000);
	});

	test('a lease runs out when the clock passes it: the task is claimed again, and the old holder is told its lease is lost', async () => {
		const queue = db.queueName('lease');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'g', payload: {} }]);
		const [first] = await claimOne(queue, 600);
		expect(first.attempt).toBe(1);
		await setQueueClock(db.pool, db.schema, 599);
		expect(await claimOne(queue)).toEqual([]); // still held
		expect((await stats(db.pool, db.ledgerSchema, queue)).expiredLeases).toBe(0);

		await setQueueClock(db.pool, db.schema, 601);
		expect((await stats(db.pool, db.ledgerSchema, queue)).expiredLeases).toBe(1);
		const [second] = await claimOne(queue);
		expect(second.taskId).toBe(first.taskId);
		expect(second.attempt).toBe(2);
		const [late] = await complete(db.pool, db.ledgerSchema, [{ taskId: first.taskId, leaseToken: first.leaseToken }]);
		expect(late.outcome).toBe('lease_lost');
		const [done] = await complete(db.pool, db.ledgerSchema, [{ taskId: second.taskId, leaseToken: second.leaseToken }]);
		expect(done.outcome).toBe('completed');
	});

	test('a retry backoff elapses when the clock passes retryAt, not before', async () => {
		const queue = db.queueName('backoff');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'g', payload: {}, maxAttempts: 3 }]);
		const [t] = await claimOne(queue);
		const [r] = await fail(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, error: 'boom' }], { baseSeconds: 1000, capSeconds: 1000 });
		expect(r.outcome).toBe('retry_scheduled');
		// Backoff 1000 s with jitter: between 500 and 1000 s from the queue's now.
		const waitMs = new Date(r.retryAt as string).getTime() - (await queueNow()).getTime();
		expect(waitMs).toBeGreaterThanOrEqual(499_000);
		expect(waitMs).toBeLessThanOrEqual(1_000_000);
		await setQueueClock(db.pool, db.schema, 499);
		expect(await claimOne(queue)).toEqual([]);
		await setQueueClock(db.pool, db.schema, 1001);
		const [again] = await claimOne(queue);
		expect(again).toMatchObject({
			taskId: t.taskId,
			attempt: 2,
			lastError: 'boom',
		});
	});

	test('a dead task ages into the purge, and the archive row out of it, on the clock', async () => {
		const queue = db.queueName('purge');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'g', payload: {} }]);
		const [t] = await claimOne(queue);
		await fail(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, error: 'no', giveUp: true }]);
		const day = 86400;
		expect(
			await purge(db.pool, db.ledgerSchema, {
				queue,
				deadAfterSeconds: day,
				archiveAfterSeconds: day,
			}),
		).toMatchObject({ deadArchived: 0, archiveDeleted: 0 });
		await setQueueClock(db.pool, db.schema, day + 1);
		expect(
			await purge(db.pool, db.ledgerSchema, {
				queue,
				deadAfterSeconds: day,
				archiveAfterSeconds: day,
			}),
		).toMatchObject({ deadArchived: 1, archiveDeleted: 0 });
		await setQueueClock(db.pool, db.schema, 2 * day + 2);
		expect(
			await purge(db.pool, db.ledgerSchema, {
				queue,
				deadAfterSeconds: day,
				archiveAfterSeconds: day,
			}),
		).toMatchObject({ deadArchived: 0, archiveDeleted: 1 });
	});

	test('what the queue stores and reports is on its clock: enqueued_at, waited seconds, oldest wait', async () => {
		await setQueueClock(db.pool, db.schema, -HOUR);
		const queue = db.queueName('stamps');
		const [t] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'g', payload: {} }]);
		const { rows } = await db.pool.query<{ e: number; r: number }>(
			`SELECT extract(epoch FROM now() - enqueued_at)::float8 AS e, extract(epoch FROM now() - run_at)::float8 AS r FROM "${db.schema}".queue_tasks WHERE id = $1`,
			[t.taskId],
		);
		expect(rows[0].e).toBeCloseTo(HOUR, 0);
		expect(rows[0].r).toBeCloseTo(HOUR, 0);
		await setQueueClock(db.pool, db.schema, 0);
		const s = await stats(db.pool, db.ledgerSchema, queue);
		expect(s.oldestWaitSeconds).toBeGreaterThan(HOUR - 5);
		expect(s.oldestPendingSeconds).toBeGreaterThan(HOUR - 5);
		const [got] = await claimOne(queue);
		expect(got.waitedSeconds).toBeGreaterThan(HOUR - 5);
	});
});
