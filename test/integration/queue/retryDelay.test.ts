/**
 * Fail's Retry Delay: Fixed. A retry waits exactly the fixed delay (run_at = the failing
 * statement's queue_now() + delay, no jitter), item by item beside the batch's exponential backoff; a
 * delay out of bounds is refused for its item only, nothing written for it.
 */
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { dequeue, fail, prepareFailInput } from '../../../src/queue';
import { LIMITS } from '../../../src/limits';
import { InputError } from '../../../src/errors';
import { closeAllPools } from '../../../src/db/pool';
import { advanceQueueClock, DATABASE_URL, queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(4);
});
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

/** Seconds between run_at and updated_at (the failing statement's queue_now()) per task id. */
async function waits(ids: string[]): Promise<Map<string, number>> {
	const { rows } = await db.pool.query<{ id: string; wait: number; status: string }>(
		`SELECT id, status, extract(epoch FROM run_at - updated_at)::float8 AS wait FROM "${db.schema}".queue_tasks WHERE id = ANY($1::bigint[])`,
		[ids],
	);
	return new Map(rows.map((r) => [r.id, r.wait]));
}

describe('fail with a fixed retry delay', () => {
	test('the retry runs at exactly now + the fixed delay; items without it keep the jittered backoff', async () => {
		const queue = db.queueName('fixed');
		await db.fill(queue, 'normal', 6, { maxAttempts: 5 });
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 6, leaseSeconds: 60 });
		expect(got).toHaveLength(6);
		const delays = [0, 1.5, 90, LIMITS.fixedDelaySeconds.max];
		const res = await fail(
			db.pool,
			db.ledgerSchema,
			got.map((t, i) => (i < 4 ? { ...t, error: 'x', retryDelay: 'fixed' as const, fixedDelaySeconds: delays[i] } : { ...t, error: 'x' })),
			{ baseSeconds: 100, capSeconds: 100 },
		);
		expect(res.map((r) => r.outcome)).toEqual(Array(6).fill('retry_scheduled'));
		const w = await waits(got.map((t) => t.taskId));
		for (let i = 0; i < 4; i++) expect(w.get(got[i].taskId)).toBe(delays[i]);
		// The other two: equal jitter of a 100 s backoff, 50 to 100 s.
		for (const t of got.slice(4)) {
			expect(w.get(t.taskId)).toBeGreaterThanOrEqual(50 - 1e-6);
			expect(w.get(t.taskId)).toBeLessThanOrEqual(100 + 1e-6);
		}
		// retryAt is the stored run_at.
		const { rows } = await db.pool.query(`SELECT run_at FROM "${db.schema}".queue_tasks WHERE id = $1`, [got[2].taskId]);
		expect(res[2].retryAt).toBe((rows[0].run_at as Date).toISOString());
		// A zero delay is claimable again at once, with the next attempt; the others are not.
		const again = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 6, leaseSeconds: 60 });
		expect(again.map((t) => [t.taskId, t.attempt])).toEqual([[got[0].taskId, 2]]);
	});

	test('the same fixed delay every attempt (no doubling)', async () => {
		const queue = db.queueName('fixed-again');
		await db.fill(queue, 'high', 1, { maxAttempts: 5 });
		for (let attempt = 1; attempt <= 3; attempt++) {
			const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
			expect(t.attempt).toBe(attempt);
			const [r] = await fail(db.pool, db.ledgerSchema, [{ ...t, error: 'x', retryDelay: 'fixed', fixedDelaySeconds: 7 }]);
			expect(r.outcome).toBe('retry_scheduled');
			expect((await waits([t.taskId])).get(t.taskId)).toBe(7);
			await advanceQueueClock(db.pool, db.schema, 7); // the retry is due
		}
	});

	test('out of bounds or an unknown mode is an InputError before any write; the SQL refuses it too', async () => {
		const t = { taskId: '1', leaseToken: '00000000-0000-4000-8000-000000000000', error: 'x' };
		for (const bad of [-1, LIMITS.fixedDelaySeconds.max + 1, Number.NaN, Infinity, 'soon'])
			expect(() => prepareFailInput({ ...t, retryDelay: 'fixed', fixedDelaySeconds: bad as number })).toThrow(InputError);
		expect(() => prepareFailInput({ ...t, retryDelay: 'linear' as 'fixed' })).toThrow(/Retry delay must be one of exponential, fixed/);
		// Exponential ignores the number; fixed without one takes the default 60 s.
		expect(prepareFailInput({ ...t, fixedDelaySeconds: -5 })).not.toHaveProperty('fixedDelaySeconds');
		expect(prepareFailInput({ ...t, retryDelay: 'fixed' }).fixedDelaySeconds).toBe(60);
		await expect(
			db.pool.query(`SELECT * FROM "${db.schema}".queue_fail('[{"i":0,"id":1,"tok":"00000000-0000-0000-0000-000000000000","delay":31536001}]', 1, 1)`),
		).rejects.toMatchObject({ code: '22023' });
	});

	test('the node: Retry Delay Fixed item by item; an out-of-bounds item goes to Unrecorded, the others are failed', async () => {
		const queue = db.queueName('fixed-node');
		await db.fill(queue, 'normal', 3, { maxAttempts: 5 });
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 3, leaseSeconds: 60 });
		const fixed = [30, -1, 45];
		const out = await new PriorityDequeue().execute.call(
			fakeExecute({
				items: got.map(() => ({ json: {} })),
				params: {
					resource: 'task',
					operation: 'fail',
					taskSource: 'explicit',
					taskId: (i: number) => got[i].taskId,
					leaseToken: (i: number) => got[i].leaseToken,
					errorMessage: 'boom',
					options: (i: number) => ({ retryDelay: 'fixed', fixedDelaySeconds: fixed[i] }),
				},
				credentials: testCredentials(DATABASE_URL, db.schema),
				continueOnFail: true,
			}),
		);
		const [unrecorded, ...rest] = out;
		expect(unrecorded).toHaveLength(1);
		expect(JSON.stringify(unrecorded[0].json)).toMatch(/Fixed delay must be a number of seconds from 0 to 31536000/);
		expect(unrecorded[0].pairedItem).toMatchObject({ item: 1 });
		const settled = rest.flat();
		expect(settled.map((it) => it.json.outcome)).toEqual(['retry_scheduled', 'retry_scheduled']);
		const w = await waits(got.map((t) => t.taskId));
		expect(w.get(got[0].taskId)).toBe(30);
		expect(w.get(got[2].taskId)).toBe(45);
		// The refused item's task is untouched: still held by its lease.
		const { rows } = await db.pool.query(`SELECT status FROM "${db.schema}".queue_tasks WHERE id = $1`, [got[1].taskId]);
		expect(rows[0].status).toBe('processing');
	});
});
