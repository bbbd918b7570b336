/**
 * Fail, backoff and the dead letter: a task that always fails reaches dead exactly once with its last
 * error; backoff is capped and jittered; dead tasks can be requeued; retention moves finished tasks out.
 */
import { backoffSeconds, dequeue, enqueue, fail, listDead, purge, requeueDead, stats, type FailResult } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
afterAll(async () => {
	await db.drop();
});

describe('fail and dead letter', () => {
	test('a task that always fails reaches dead exactly once, with its last error', async () => {
		const queue = db.queueName('always');
		await db.fill(queue, 'normal', 40, { maxAttempts: 3 });
		const outcomes: FailResult[] = [];
		// Each consumer stops when the queue says nothing is left (no pending, none in flight), not
		// after a number of idle pauses; a retry with backoff 0 is due at once.
		const consumer = async () => {
			for (;;) {
				const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 60 });
				if (got.length === 0) {
					const s = await stats(db.pool, db.ledgerSchema, queue);
					if (s.depth === 0 && s.inFlight === 0) return;
					continue;
				}
				outcomes.push(
					...(await fail(
						db.pool,
						db.ledgerSchema,
						got.map((t) => ({ ...t, error: `boom on attempt ${t.attempt}` })),
						{ baseSeconds: 0, capSeconds: 0 },
					)),
				);
			}
		};
		await Promise.all(Array.from({ length: 4 }, consumer));
		const dead = outcomes.filter((o) => o.outcome === 'dead');
		expect(dead).toHaveLength(40);
		expect(new Set(dead.map((o) => o.taskId)).size).toBe(40);
		expect(outcomes.filter((o) => o.outcome === 'retry_scheduled')).toHaveLength(80);
		expect(outcomes).toHaveLength(120);
		expect(dead.every((o) => o.attempts === 3 && o.lastError === 'boom on attempt 3')).toBe(true);
		const s = await stats(db.pool, db.ledgerSchema, queue);
		expect(s).toMatchObject({ dead: 40, depth: 0, inFlight: 0 });
		const listed = await listDead(db.pool, db.ledgerSchema, queue, 100);
		expect(listed).toHaveLength(40);
		expect(listed.every((t) => t.lastError === 'boom on attempt 3' && t.attempts === 3)).toBe(true);
	});

	test('the final fail sent twice at once: one dead, the other changes nothing', async () => {
		const queue = db.queueName('twice');
		await db.fill(queue, 'high', 1, { maxAttempts: 1 });
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		const [a, b] = await Promise.all([
			fail(db.pool, db.ledgerSchema, [{ ...t, error: 'first' }]),
			fail(db.pool, db.ledgerSchema, [{ ...t, error: 'second' }]),
		]);
		const results = [a[0], b[0]];
		expect(results.filter((r) => r.outcome === 'dead')).toHaveLength(1);
		expect(results.filter((r) => r.outcome === 'already_settled')).toHaveLength(1);
		const winner = results.find((r) => r.outcome === 'dead') as FailResult;
		const { rows } = await db.pool.query(`SELECT status, last_error FROM "${db.schema}".queue_tasks WHERE id = $1`, [t.taskId]);
		expect(rows[0]).toEqual({ status: 'dead', last_error: winner.lastError });
	});

	test('give up sends a task dead at once', async () => {
		const queue = db.queueName('giveup');
		await db.fill(queue, 'high', 1, { maxAttempts: 10 });
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		const [r] = await fail(db.pool, db.ledgerSchema, [{ ...t, error: 'invalid payload', giveUp: true }]);
		expect(r).toMatchObject({ outcome: 'dead', attempts: 1, lastError: 'invalid payload' });
	});

	test('backoff is capped exponential with equal jitter, in seconds', async () => {
		expect([1, 2, 3, 4, 5].map((a) => backoffSeconds(a, 5, 30))).toEqual([5, 10, 20, 30, 30]);
		const queue = db.queueName('backoff');
		await db.fill(queue, 'high', 20, { maxAttempts: 10 });
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 20, leaseSeconds: 60 });
		// Move attempts to 3 for half of them: backoff min(15, 10 * 2^2) = 15.
		const third = got.slice(10).map((t) => t.taskId);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = 3 WHERE id = ANY($1::bigint[])`, [third]);
		const res = await fail(db.pool, db.ledgerSchema, got.map((t) => ({ ...t, error: 'x' })), { baseSeconds: 10, capSeconds: 15 });
		expect(res.every((r) => r.outcome === 'retry_scheduled')).toBe(true);
		const { rows } = await db.pool.query<{ id: string; wait: number }>(
			`SELECT id, extract(epoch FROM run_at - updated_at)::float8 AS wait FROM "${db.schema}".queue_tasks WHERE id = ANY($1::bigint[])`,
			[got.map((t) => t.taskId)],
		);
		for (const r of rows) {
			const b = third.includes(r.id) ? 15 : 10;
			expect(r.wait).toBeGreaterThanOrEqual(b / 2 - 1e-6);
			expect(r.wait).toBeLessThanOrEqual(b + 1e-6);
		}
		// Jittered: not all the same.
		expect(new Set(rows.map((r) => r.wait.toFixed(3))).size).toBeGreaterThan(1);
		// Not claimable before the retry time.
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 20, leaseSeconds: 60 })).toHaveLength(0);
	});

	test('requeue dead by hand: pending again with attempts reset and the old error kept', async () => {
		const queue = db.queueName('requeue');
		await db.fill(queue, 'low', 3, { maxAttempts: 1 });
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 3, leaseSeconds: 60 });
		await fail(db.pool, db.ledgerSchema, got.map((t) => ({ ...t, error: 'downstream 500' })));
		const one = await requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: [got[0].taskId, '999999999'] });
		expect(one.map((r) => r.outcome)).toEqual(['requeued', 'not_found']);
		expect(one[0]).toMatchObject({ status: 'pending', lastError: 'downstream 500', requeues: 1 });
		const rest = await requeueDead(db.pool, db.ledgerSchema, { queue, limit: 10 });
		expect(rest.map((r) => r.taskId).sort()).toEqual([got[1].taskId, got[2].taskId].sort());
		const again = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
		expect(again).toHaveLength(3);
		expect(again.every((t) => t.attempt === 1 && t.lastError === 'downstream 500')).toBe(true);
		expect((await requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: [again[0].taskId] }))[0].outcome).toBe('not_dead');
	});

	test('requeue skips a dead task whose dedupe key is live again', async () => {
		const queue = db.queueName('requeue-dup');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'k', maxAttempts: 1 }]);
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		await fail(db.pool, db.ledgerSchema, [{ ...t, error: 'e' }]);
		const [live] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'k' }]);
		expect(live.deduplicated).toBe(false);
		const [r] = await requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: [t.taskId] });
		expect(r.outcome).toBe('skipped_live_duplicate');
		expect(r.status).toBe('dead');
	});

	test('retention: old dead tasks move to the archive, old archive rows are deleted', async () => {
		const queue = db.queueName('purge');
		await db.fill(queue, 'high', 2, { maxAttempts: 1 });
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 2, leaseSeconds: 60 });
		await fail(db.pool, db.ledgerSchema, got.map((t) => ({ ...t, error: 'gone' })));
		expect(await purge(db.pool, db.ledgerSchema, { queue, deadAfterSeconds: 3600 })).toEqual({ deadArchived: 0, archiveDeleted: 0 });
		expect(await purge(db.pool, db.ledgerSchema, { queue, deadAfterSeconds: 0 })).toEqual({ deadArchived: 2, archiveDeleted: 0 });
		const { rows } = await db.pool.query(
			`SELECT status, last_error FROM "${db.schema}".queue_tasks_archive WHERE id = ANY($1::bigint[])`,
			[got.map((t) => t.taskId)],
		);
		expect(rows).toEqual([
			{ status: 'dead', last_error: 'gone' },
			{ status: 'dead', last_error: 'gone' },
		]);
		expect((await stats(db.pool, db.ledgerSchema, queue)).dead).toBe(0);
		expect(await purge(db.pool, db.ledgerSchema, { queue, archiveAfterSeconds: 0 })).toEqual({ deadArchived: 0, archiveDeleted: 2 });
	});
});
