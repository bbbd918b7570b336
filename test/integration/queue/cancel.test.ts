/**
 * Cancel: by id or by dedupe key, with a reason and who asked. A waiting task ends
 * cancelled at once and is never claimed; a task held by a live lease is cancel-requested and its
 * holder's next Complete, Fail, Release or Extend Lease answers `cancelled` and ends it; a
 * cancel-requested task whose lease expires ends cancelled at the sweep. Raced against concurrent
 * claimers: every task is either cancelled-never-claimed or claimed-then-cancel-requested.
 */
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { cancel, complete, dequeue, enqueue, extendLease, fail, prepareCancelInput, release, type CancelResult, type ClaimedTask } from '../../../src/queue';
import { InputError } from '../../../src/errors';
import { closeAllPools } from '../../../src/db/pool';
import { advanceQueueClock, DATABASE_URL, queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const archived = async (id: string) =>
	(await db.pool.query(`SELECT status, cancel_reason, cancelled_by, lease_end, dedupe_key, result FROM "${db.schema}".queue_tasks_archive WHERE id = $1`, [id])).rows[0];
const live = async (id: string) => (await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE id = $1`, [id])).rows[0];
const claim = (queue: string, limit = 10, leaseSeconds = 60) => dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds });

describe('cancel a waiting task', () => {
	test('pending by id: cancelled at once, recorded with reason and who, never claimed', async () => {
		const queue = db.queueName('c-pending');
		const [id, other] = await db.fill(queue, 'high', 2);
		const [r] = await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: id, reason: 'customer withdrew', cancelledBy: 'ops@example.com' }]);
		expect(r).toMatchObject({ taskId: id, outcome: 'cancelled', status: 'cancelled', cancelRequestedAt: null });
		expect(await live(id)).toBeUndefined();
		expect(await archived(id)).toMatchObject({ status: 'cancelled', cancel_reason: 'customer withdrew', cancelled_by: 'ops@example.com' });
		const got = await claim(queue);
		expect(got.map((t) => t.taskId)).toEqual([other]);
		// Cancelled again, or a task that already ended: finished, nothing changed.
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: id }]))[0]).toMatchObject({ outcome: 'finished', status: 'cancelled' });
		await complete(db.pool, db.ledgerSchema, [{ ...got[0] }]);
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: other }]))[0]).toMatchObject({ outcome: 'finished', status: 'succeeded' });
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: '999999999' }]))[0]).toMatchObject({ outcome: 'not_found', taskId: '999999999', status: null });
	});

	test('by id only within the queue: a task of another queue is not_found and stays as it was', async () => {
		const queue = db.queueName('c-own');
		const other = db.queueName('c-foreign');
		const [mine] = await db.fill(queue, 'high', 1);
		const [waiting, held] = await db.fill(other, 'high', 2);
		const [lease] = await claim(other, 1);
		expect(lease.taskId).toBe(waiting);
		const res = await cancel(db.pool, db.ledgerSchema, [
			{ queue, taskId: waiting, reason: 'wrong queue' },
			{ queue, taskId: held },
			{ queue, taskId: mine },
		]);
		expect(res.map((r) => [r.taskId, r.outcome, r.status])).toEqual([
			[waiting, 'not_found', null],
			[held, 'not_found', null],
			[mine, 'cancelled', 'cancelled'],
		]);
		expect(res[0].detail).toMatch(/in this queue/);
		// The other queue's tasks are untouched: the leased one settles, the pending one is claimed.
		expect(await live(waiting)).toMatchObject({ status: 'processing', cancel_requested_at: null, cancel_reason: null });
		expect((await complete(db.pool, db.ledgerSchema, [{ ...lease }]))[0].outcome).toBe('completed');
		expect((await claim(other)).map((t) => t.taskId)).toEqual([held]);
		// A finished task of another queue is not_found too (not "finished"): the archive is read by queue as well.
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: waiting }]))[0]).toMatchObject({ outcome: 'not_found', status: null });
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue: other, taskId: waiting }]))[0]).toMatchObject({ outcome: 'finished', status: 'succeeded' });
	});

	test('a retry waiting out its delay is cancelled; a dead task is finished', async () => {
		const queue = db.queueName('c-retry');
		await db.fill(queue, 'normal', 2, { maxAttempts: 1 });
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', maxAttempts: 3 }]);
		const got = await claim(queue);
		const res = await fail(db.pool, db.ledgerSchema, got.map((t) => ({ ...t, error: 'boom', retryDelay: 'fixed' as const, fixedDelaySeconds: 600 })));
		const retrying = got[res.findIndex((x) => x.outcome === 'retry_scheduled')];
		const dead = got[res.findIndex((x) => x.outcome === 'dead')];
		const [a, b] = await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: retrying.taskId, reason: 'stop retrying' }, { queue, taskId: dead.taskId }]);
		expect(a).toMatchObject({ outcome: 'cancelled', status: 'cancelled' });
		expect(b).toMatchObject({ outcome: 'finished', status: 'dead' });
		expect(await archived(retrying.taskId)).toMatchObject({ status: 'cancelled', cancel_reason: 'stop retrying', lease_end: 'failed', cancelled_by: null });
		// Its old lease's late settle is told it was cancelled.
		expect((await complete(db.pool, db.ledgerSchema, [{ ...retrying }]))[0]).toMatchObject({ outcome: 'cancelled', status: 'cancelled' });
	});

	test('by dedupe key: the live task of that queue, in NFC; the key is free for a new enqueue at once', async () => {
		const queue = db.queueName('c-key');
		const [first] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', dedupeKey: 'order-é', payload: { v: 1 } }]);
		const [r] = await cancel(db.pool, db.ledgerSchema, [{ queue, dedupeKey: 'order-e\u0301', reason: 'replaced' }]);
		expect(r).toMatchObject({ taskId: first.taskId, outcome: 'cancelled' });
		expect(await archived(first.taskId)).toMatchObject({ status: 'cancelled', dedupe_key: 'order-é' });
		const [again] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', dedupeKey: 'order-é', payload: { v: 2 } }]);
		expect(again.deduplicated).toBe(false);
		expect(again.taskId).not.toBe(first.taskId);
		const [t] = await claim(queue);
		expect(t).toMatchObject({ taskId: again.taskId, payload: { v: 2 } });
		// Another queue's key, or a key nobody holds: not found.
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue: `${queue}-other`, dedupeKey: 'order-é' }]))[0].outcome).toBe('not_found');
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, dedupeKey: 'nobody' }]))[0]).toMatchObject({ outcome: 'not_found', taskId: null });
	});
});

describe('cancel a task being worked on', () => {
	test.each([
		['complete', (t: ClaimedTask) => complete(db.pool, db.ledgerSchema, [{ ...t, result: { done: true } }])],
		['fail', (t: ClaimedTask) => fail(db.pool, db.ledgerSchema, [{ ...t, error: 'x' }])],
		['release', (t: ClaimedTask) => release(db.pool, db.ledgerSchema, [{ ...t }])],
		['extend lease', (t: ClaimedTask) => extendLease(db.pool, db.ledgerSchema, [{ ...t, leaseSeconds: 60 }])],
	] as const)('cancel-requested; the holder\'s %s answers cancelled and ends it cancelled', async (_name, settle) => {
		const queue = db.queueName('c-held');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'k1' }]);
		const [t] = await claim(queue);
		const [r] = await cancel(db.pool, db.ledgerSchema, [{ queue, dedupeKey: 'k1', reason: 'operator stop', cancelledBy: 'form' }]);
		expect(r).toMatchObject({ taskId: t.taskId, outcome: 'cancel_requested', status: 'processing' });
		expect(r.cancelRequestedAt).not.toBeNull();
		// Asked again: the first request stays.
		const [r2] = await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: t.taskId, reason: 'second', cancelledBy: 'other' }]);
		expect(r2).toMatchObject({ outcome: 'cancel_requested', cancelRequestedAt: r.cancelRequestedAt });
		// The key is free while the holder still works: a new enqueue is a new task.
		const [fresh] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'k1' }]);
		expect(fresh.deduplicated).toBe(false);
		const [s] = await settle(t);
		expect(s).toMatchObject({ taskId: t.taskId, outcome: 'cancelled', status: 'cancelled' });
		expect(await live(t.taskId)).toBeUndefined();
		expect(await archived(t.taskId)).toMatchObject({ status: 'cancelled', cancel_reason: 'operator stop', cancelled_by: 'form', lease_end: 'cancelled', dedupe_key: 'k1', result: null });
		// A repeat is told the same; the task is never handed out again.
		expect((await settle(t))[0]).toMatchObject({ outcome: 'cancelled' });
		expect((await claim(queue)).map((x) => x.taskId)).toEqual([fresh.taskId]);
	});

	test('a cancel-requested task whose lease expires ends cancelled at the sweep, never runs again', async () => {
		const queue = db.queueName('c-expire');
		await db.fill(queue, 'normal', 1, { maxAttempts: 5 });
		const [t] = await claim(queue);
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: t.taskId }]))[0].outcome).toBe('cancel_requested');
		await advanceQueueClock(db.pool, db.schema, 61); // the 60 s lease ran out
		expect(await claim(queue)).toEqual([]);
		expect(await archived(t.taskId)).toMatchObject({ status: 'cancelled', lease_end: 'expired', cancel_reason: 'cancelled' });
		expect((await complete(db.pool, db.ledgerSchema, [{ ...t }]))[0].outcome).toBe('cancelled');
	});

	test('a task whose lease already expired (not requested before) is cancelled at once', async () => {
		const queue = db.queueName('c-expired');
		await db.fill(queue, 'normal', 1);
		const [t] = await claim(queue);
		await advanceQueueClock(db.pool, db.schema, 61); // the 60 s lease ran out
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: t.taskId }]))[0]).toMatchObject({ outcome: 'cancelled' });
		expect(await archived(t.taskId)).toMatchObject({ status: 'cancelled', lease_end: 'cancelled' });
		expect(await claim(queue)).toEqual([]);
	});
});

describe('cancel racing claims', () => {
	/** Tasks per round: enough that 4 claimers cannot drain the queue before the first cancel. */
	const TASKS = 200;
	test('4 claimers and a canceller (4 rounds of 200 tasks): each task is cancelled-never-claimed or claimed-then-cancel-requested, none lost, none run after', async () => {
		for (let round = 0; round < 4; round++) {
			const queue = db.queueName('c-race');
			const ids = await db.fill(queue, 'high', TASKS);
			const claimed: ClaimedTask[] = [];
			let stop = false;
			let firstClaim: () => void = () => {};
			const claimedOnce = new Promise<void>((resolve) => (firstClaim = resolve));
			// Back to back, with no pause when a claim comes back empty: each waits for its own query.
			const claimer = async () => {
				while (!stop) {
					const got = await claim(queue, 3, 120);
					claimed.push(...got);
					if (got.length > 0) firstClaim();
				}
			};
			const claimers = Array.from({ length: 4 }, claimer);
			// Cancel every task, a few at a time, while the claimers run: from the newest, which the
			// claimers reach last (so some are cancelled before any claim takes them), starting once a
			// claim has taken one (so some are claimed before their cancel). Both sides then happen in
			// every round whatever the machine's load; which side each task in between takes varies.
			await claimedOnce;
			const newestFirst = [...ids].reverse();
			const outcomes = new Map<string, CancelResult>();
			for (let k = 0; k < newestFirst.length; k += 5) {
				const res = await cancel(db.pool, db.ledgerSchema, newestFirst.slice(k, k + 5).map((taskId) => ({ queue, taskId, reason: `round ${round}` })));
				res.forEach((r) => outcomes.set(r.taskId as string, r));
			}
			stop = true;
			await Promise.all(claimers);
			// Nothing is claimable afterwards.
			expect(await claim(queue, 100)).toEqual([]);
			const claimedIds = new Map<string, ClaimedTask[]>();
			for (const t of claimed) claimedIds.set(t.taskId, [...(claimedIds.get(t.taskId) ?? []), t]);
			for (const id of ids) {
				const r = outcomes.get(id) as CancelResult;
				const held = claimedIds.get(id) ?? [];
				if (r.outcome === 'cancelled') expect(held).toHaveLength(0);
				else {
					expect(r.outcome).toBe('cancel_requested');
					expect(held).toHaveLength(1);
				}
			}
			// Every holder learns it must stop.
			const settled = await complete(db.pool, db.ledgerSchema, claimed.map((t) => ({ ...t })));
			expect(settled.every((s) => s.outcome === 'cancelled')).toBe(true);
			const { rows } = await db.pool.query(
				`SELECT (SELECT count(*) FROM "${db.schema}".queue_tasks WHERE queue = $1)::int AS live,
				        (SELECT count(*) FROM "${db.schema}".queue_tasks_archive WHERE queue = $1 AND status = 'cancelled')::int AS cancelled`,
				[queue],
			);
			expect(rows[0]).toEqual({ live: 0, cancelled: TASKS });
			// Both sides happened in this round.
			const sides = [...outcomes.values()];
			expect(sides.filter((r) => r.outcome === 'cancelled').length).toBeGreaterThan(0);
			expect(sides.filter((r) => r.outcome === 'cancel_requested').length).toBeGreaterThan(0);
		}
	});
});

describe('Cancel: input and the node', () => {
	test('exactly one of a task id or a dedupe key; bad ones are InputError', () => {
		expect(() => prepareCancelInput({ queue: 'q' })).toThrow(InputError);
		expect(() => prepareCancelInput({ taskId: '1', queue: 'q', dedupeKey: 'k' })).toThrow(/not both and not neither/);
		expect(() => prepareCancelInput({ queue: 'q', taskId: 'abc' })).toThrow(InputError);
		expect(() => prepareCancelInput({ queue: '', dedupeKey: 'k' })).toThrow(/Queue name/);
		expect(() => prepareCancelInput({ queue: '', taskId: '1' })).toThrow(/Queue name/);
		expect(() => prepareCancelInput({ taskId: '1' } as never)).toThrow(/Queue name/);
		expect(() => prepareCancelInput({ queue: 'q', dedupeKey: 'a\u0000b' })).toThrow(/Dedupe key/);
		expect(prepareCancelInput({ queue: 'q', taskId: 7, reason: 'x'.repeat(5000) }).reason).toHaveLength(2000);
	});

	test('the node: one output item per input item on Result; a bad item on Unrecorded, nothing written for it', async () => {
		const queue = db.queueName('c-node');
		const [a, b] = await db.fill(queue, 'high', 2);
		const taskIds = [a, 'not-an-id', b];
		const out = await new PriorityDequeue().execute.call(
			fakeExecute({
				items: taskIds.map(() => ({ json: {} })),
				params: { resource: 'task', operation: 'cancel', queue, cancelBy: 'taskId', taskId: (i: number) => taskIds[i], reason: 'from a form', cancelledBy: 'alice' },
				credentials: testCredentials(DATABASE_URL, db.schema),
				continueOnFail: true,
			}),
		);
		expect(out).toHaveLength(2);
		const [unrecorded, result] = out;
		expect(unrecorded).toHaveLength(1);
		expect(unrecorded[0].pairedItem).toMatchObject({ item: 1 });
		expect(result.map((it) => [it.json.taskId, it.json.outcome, (it.pairedItem as { item: number }).item])).toEqual([
			[a, 'cancelled', 0],
			[b, 'cancelled', 2],
		]);
		expect(await archived(a)).toMatchObject({ cancel_reason: 'from a form', cancelled_by: 'alice' });
	});
});
