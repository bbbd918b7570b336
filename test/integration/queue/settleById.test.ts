/**
 * Settle by ID: an operator completes, fails, retries or reschedules a task by id without
 * its lease, recorded with who and why. A task held by a lease is acted on at once and its holder's
 * next settle or extension answers lease_lost, changing nothing (fenced by the lease end, not the
 * token). Raced against the holders' own completes: every task ends exactly once, by one side.
 */
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { cancel, complete, dequeue, enqueue, extendLease, fail, prepareSettleByIdInput, release, settleById, type ClaimedTask } from '../../../src/queue';
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
	(await db.pool.query(`SELECT status, result, lease_end, operator_action, operator_by, operator_reason, operator_at IS NOT NULL AS stamped FROM "${db.schema}".queue_tasks_archive WHERE id = $1`, [id])).rows[0];
const live = async (id: string) => (await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE id = $1`, [id])).rows[0];
const claim = (queue: string, limit = 10, leaseSeconds = 60) => dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds });

describe('settle a waiting task by id', () => {
	test('complete: archived succeeded with the result, who and why; never claimed', async () => {
		const queue = db.queueName('s-complete');
		const [id, other] = await db.fill(queue, 'high', 2);
		const [r] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: id, action: 'complete', result: { by: 'hand' }, reason: 'paid by phone', settledBy: 'ops@example.com' }]);
		expect(r).toMatchObject({ taskId: id, outcome: 'completed', status: 'succeeded', leaseEnded: false, runAt: null });
		expect(await live(id)).toBeUndefined();
		expect(await archived(id)).toMatchObject({ status: 'succeeded', result: { by: 'hand' }, operator_action: 'complete', operator_by: 'ops@example.com', operator_reason: 'paid by phone', stamped: true, lease_end: null });
		expect((await claim(queue)).map((t) => t.taskId)).toEqual([other]);
		// Again, or any act on a task that ended: finished, nothing changed; unknown id or another queue: not_found.
		const again = await settleById(db.pool, db.ledgerSchema, [
			{ queue, taskId: id, action: 'fail' },
			{ queue, taskId: id, action: 'complete', result: { second: true } },
			{ queue: `${queue}-other`, taskId: id, action: 'complete' },
			{ queue, taskId: '999999999', action: 'reschedule' },
		]);
		expect(again.map((x) => [x.outcome, x.status])).toEqual([
			['finished', 'succeeded'],
			['finished', 'succeeded'],
			['not_found', null],
			['not_found', null],
		]);
		expect((await archived(id)).result).toEqual({ by: 'hand' });
	});

	test('fail: dead now with operator_failed and the reason as last error; fail/retry/reschedule of a dead task are finished, complete is not', async () => {
		const queue = db.queueName('s-fail');
		const [id] = await db.fill(queue, 'normal', 1);
		const [r] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: id, action: 'fail', reason: 'bad address', settledBy: 'bob' }]);
		expect(r).toMatchObject({ outcome: 'dead', status: 'dead', leaseEnded: false });
		expect(await live(id)).toMatchObject({ status: 'dead', dead_reason: 'operator_failed', last_error: 'bad address', operator_action: 'fail', operator_by: 'bob' });
		expect(await claim(queue)).toEqual([]);
		const res = await settleById(db.pool, db.ledgerSchema, ['fail', 'retry', 'reschedule'].map((action) => ({ queue, taskId: id, action: action as 'fail' })));
		expect(res.map((x) => x.outcome)).toEqual(['finished', 'finished', 'finished']);
		expect(res[1].detail).toMatch(/Requeue Dead/);
		// A dead task may be completed by hand (resolved outside the queue).
		expect((await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: id, action: 'complete', result: { fixed: 1 } }]))[0]).toMatchObject({ outcome: 'completed' });
		expect(await archived(id)).toMatchObject({ status: 'succeeded', result: { fixed: 1 }, operator_action: 'complete' });
	});

	test('reschedule and retry: pending at the new time by the queue clock, claimed then and not before', async () => {
		const queue = db.queueName('s-later');
		const [a, b] = await db.fill(queue, 'high', 2);
		const clock = (await db.pool.query(`SELECT "${db.schema}".queue_now() AS t`)).rows[0].t as Date;
		const at = new Date(clock.getTime() + 600_000).toISOString();
		const res = await settleById(db.pool, db.ledgerSchema, [
			{ queue, taskId: a, action: 'reschedule', runAt: at, reason: 'after the outage' },
			{ queue, taskId: b, action: 'retry', runAt: at, reason: 'supplier said try later' },
		]);
		expect(res.map((x) => [x.outcome, x.runAt])).toEqual([
			['rescheduled', at],
			['retry_scheduled', at],
		]);
		expect(await live(a)).toMatchObject({ status: 'pending', last_error: null, operator_action: 'reschedule', vtag: null });
		expect(await live(b)).toMatchObject({ status: 'pending', last_error: 'supplier said try later', operator_action: 'retry' });
		expect(await claim(queue)).toEqual([]);
		await advanceQueueClock(db.pool, db.schema, 601);
		const got = await claim(queue);
		expect(got.map((t) => t.taskId).sort()).toEqual([a, b].sort());
		// The record survives to the archive when the task completes later.
		await complete(db.pool, db.ledgerSchema, got.map((t) => ({ ...t })));
		expect(await archived(a)).toMatchObject({ status: 'succeeded', operator_action: 'reschedule', operator_reason: 'after the outage' });
		// Cancelled later (waiting, and held by a lease at its holder's settle): the record goes to the archive too.
		const [d, e] = await db.fill(queue, 'high', 2);
		await settleById(db.pool, db.ledgerSchema, [d, e].map((taskId) => ({ queue, taskId, action: 'reschedule' as const, reason: 'first', settledBy: 'carol' })));
		const [held] = await claim(queue, 1);
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: d === held.taskId ? e : d }, { queue, taskId: held.taskId }])).map((x) => x.outcome).sort()).toEqual(['cancel_requested', 'cancelled']);
		expect((await complete(db.pool, db.ledgerSchema, [{ ...held }]))[0].outcome).toBe('cancelled');
		for (const x of [d, e]) expect(await archived(x)).toMatchObject({ status: 'cancelled', operator_action: 'reschedule', operator_by: 'carol', operator_reason: 'first' });
		// Empty run-at: now; a past one: now (the queue clock).
		const [c] = await db.fill(queue, 'high', 1);
		const [now] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: c, action: 'reschedule', runAt: '2001-01-01T00:00:00Z' }]);
		expect(now.outcome).toBe('rescheduled');
		expect((await claim(queue)).map((t) => t.taskId)).toEqual([c]);
	});

	test('retry at max attempts goes dead (max_attempts_reached), as a Fail at the last attempt does', async () => {
		const queue = db.queueName('s-max');
		await db.fill(queue, 'high', 1, { maxAttempts: 1 });
		const [t] = await claim(queue);
		const [r] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: t.taskId, action: 'retry', reason: 'again' }]);
		expect(r).toMatchObject({ outcome: 'dead', status: 'dead', leaseEnded: true });
		expect(await live(t.taskId)).toMatchObject({ dead_reason: 'max_attempts_reached', lease_end: 'operator', last_error: 'again' });
	});
});

describe('settle a task held by a lease', () => {
	test.each([
		['complete', (t: ClaimedTask) => complete(db.pool, db.ledgerSchema, [{ ...t, result: { holder: true } }])],
		['fail', (t: ClaimedTask) => fail(db.pool, db.ledgerSchema, [{ ...t, error: 'x' }])],
		['release', (t: ClaimedTask) => release(db.pool, db.ledgerSchema, [{ ...t }])],
		['extend lease', (t: ClaimedTask) => extendLease(db.pool, db.ledgerSchema, [{ ...t, leaseSeconds: 60 }])],
	] as const)('acted on at once; the holder\'s %s answers lease_lost and changes nothing', async (_name, settle) => {
		for (const action of ['complete', 'fail', 'reschedule'] as const) {
			const queue = db.queueName('s-held');
			await db.fill(queue, 'high', 1);
			const [t] = await claim(queue);
			const [r] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: t.taskId, action, reason: 'operator' }]);
			expect(r.leaseEnded).toBe(true);
			const before = (await live(t.taskId)) ?? (await archived(t.taskId));
			const [s] = await settle(t);
			expect(s).toMatchObject({ taskId: t.taskId, outcome: 'lease_lost' });
			expect(s.detail).toMatch(/operator settled the task by hand/);
			expect((await live(t.taskId)) ?? (await archived(t.taskId))).toEqual(before);
			if (action === 'complete') expect(await archived(t.taskId)).toMatchObject({ status: 'succeeded', result: null, lease_end: 'operator' });
			if (action === 'reschedule') {
				// The task runs again under a new lease; the old holder stays fenced off.
				const [again] = await claim(queue);
				expect(again.taskId).toBe(t.taskId);
				expect((await complete(db.pool, db.ledgerSchema, [{ ...t }]))[0].outcome).toBe('lease_lost');
				expect((await complete(db.pool, db.ledgerSchema, [{ ...again }]))[0].outcome).toBe('completed');
			}
		}
	});

	test('a lease that expired (not swept) is ended as a live one; a cancel-requested task is left to its cancel', async () => {
		const queue = db.queueName('s-expired');
		await db.fill(queue, 'high', 2);
		const [t, u] = await claim(queue);
		await advanceQueueClock(db.pool, db.schema, 61);
		const [r] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: t.taskId, action: 'fail', reason: 'stuck' }]);
		expect(r).toMatchObject({ outcome: 'dead', leaseEnded: true });
		const [u2] = await claim(queue); // the sweep requeued u; claimed again
		expect(u2.taskId).toBe(u.taskId);
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: u2.taskId }]))[0].outcome).toBe('cancel_requested');
		const [c] = await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: u2.taskId, action: 'complete' }]);
		expect(c).toMatchObject({ outcome: 'cancel_requested', status: 'processing', leaseEnded: false });
		expect((await complete(db.pool, db.ledgerSchema, [{ ...u2 }]))[0].outcome).toBe('cancelled');
	});
});

describe('settle by id racing the holders', () => {
	test('4 holders completing what they claim while an operator completes the same tasks by id (3 rounds of 120): each task ends once, by one side, with that side\'s result', async () => {
		for (let round = 0; round < 3; round++) {
			const queue = db.queueName('s-race');
			const ids = await db.fill(queue, 'high', 120);
			const holderWon = new Set<string>();
			const holderLost = new Set<string>();
			let stop = false;
			let firstClaim: () => void = () => {};
			const claimedOnce = new Promise<void>((resolve) => (firstClaim = resolve));
			const holder = async () => {
				while (!stop) {
					const got = await claim(queue, 2, 120);
					if (got.length > 0) firstClaim();
					else await new Promise((r) => setImmediate(r)); // an empty claim yields (no wait) and tries again
					const res = await complete(db.pool, db.ledgerSchema, got.map((t) => ({ ...t, result: { by: 'holder' } })));
					res.forEach((s, k) => (s.outcome === 'completed' ? holderWon : holderLost).add(got[k].taskId));
					for (const s of res) expect(['completed', 'lease_lost']).toContain(s.outcome);
				}
			};
			const holders = Array.from({ length: 4 }, holder);
			await claimedOnce;
			const operator = new Map<string, string>();
			const newestFirst = [...ids].reverse();
			for (let k = 0; k < newestFirst.length; k += 4) {
				const res = await settleById(db.pool, db.ledgerSchema, newestFirst.slice(k, k + 4).map((taskId) => ({ queue, taskId, action: 'complete' as const, result: { by: 'operator' } })));
				res.forEach((r) => operator.set(r.taskId as string, r.outcome));
			}
			stop = true;
			await Promise.all(holders);
			const { rows } = await db.pool.query(`SELECT id::text, status, result FROM "${db.schema}".queue_tasks_archive WHERE queue = $1`, [queue]);
			expect(rows).toHaveLength(120);
			expect((await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue])).rows[0].n).toBe(0);
			for (const row of rows) {
				expect(row.status).toBe('succeeded');
				const op = operator.get(row.id);
				if (row.result.by === 'holder') {
					expect(holderWon.has(row.id)).toBe(true);
					expect(op).toBe('finished');
				} else {
					expect(op).toBe('completed');
					expect(holderWon.has(row.id)).toBe(false);
				}
			}
			// Both sides won some in this round.
			expect(holderWon.size).toBeGreaterThan(0);
			expect([...operator.values()].filter((o) => o === 'completed').length).toBeGreaterThan(0);
		}
	});
});

describe('Settle by ID: input and the node', () => {
	test('bad inputs are InputError; texts are cut', () => {
		expect(() => prepareSettleByIdInput({ queue: 'q', taskId: 'abc', action: 'complete' })).toThrow(InputError);
		expect(() => prepareSettleByIdInput({ queue: '', taskId: '1', action: 'complete' })).toThrow(/Queue name/);
		expect(() => prepareSettleByIdInput({ queue: 'q', taskId: '1', action: 'delete' as never })).toThrow(/Action must be one of/);
		expect(() => prepareSettleByIdInput({ queue: 'q', taskId: '1', action: 'reschedule', runAt: 'tomorrow' })).toThrow(/Run at is not a valid date/);
		expect(() => prepareSettleByIdInput({ queue: 'q', taskId: '1', action: 'complete', result: { a: 'x\u0000' } })).toThrow(/not plain JSON/);
		expect(prepareSettleByIdInput({ queue: 'q', taskId: 7, action: 'fail', reason: 'x'.repeat(5000) }).reason).toHaveLength(2000);
		expect(prepareSettleByIdInput({ queue: 'q', taskId: 7, action: 'retry', runAt: '2030-12-01T10:00:00' }).runAt).toBe('2030-12-01T10:00:00.000Z');
	});

	test('the node: one output item per input item on Result; a bad item on Unrecorded, nothing written for it', async () => {
		const queue = db.queueName('s-node');
		const [a, b] = await db.fill(queue, 'high', 2);
		const taskIds = [a, 'not-an-id', b];
		const out = await new PriorityDequeue().execute.call(
			fakeExecute({
				items: taskIds.map(() => ({ json: {} })),
				params: { resource: 'task', operation: 'settleById', queue, taskId: (i: number) => taskIds[i], settleAction: 'complete', result: '{"ok":true}', reason: 'from a form', settledBy: 'alice' },
				credentials: testCredentials(DATABASE_URL, db.schema),
				continueOnFail: true,
			}),
		);
		expect(out).toHaveLength(2);
		const [unrecorded, result] = out;
		expect(unrecorded).toHaveLength(1);
		expect(unrecorded[0].pairedItem).toMatchObject({ item: 1 });
		expect(result.map((it) => [it.json.taskId, it.json.outcome, it.json.leaseEnded, (it.pairedItem as { item: number }).item])).toEqual([
			[a, 'completed', false, 0],
			[b, 'completed', false, 2],
		]);
		expect(await archived(a)).toMatchObject({ result: { ok: true }, operator_reason: 'from a form', operator_by: 'alice' });
	});

	test('the node: reschedule by id with a run-at', async () => {
		const queue = db.queueName('s-node-later');
		const [a] = await db.fill(queue, 'high', 1);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high' }]);
		const out = await new PriorityDequeue().execute.call(
			fakeExecute({
				items: [{ json: { taskId: a } }],
				params: { resource: 'task', operation: 'settleById', queue, taskId: a, settleAction: 'reschedule', runAt: '9999-01-01T00:00:00Z', reason: '', settledBy: '' },
				credentials: testCredentials(DATABASE_URL, db.schema),
			}),
		);
		expect(out[1][0].json).toMatchObject({ taskId: a, outcome: 'rescheduled', runAt: '9999-01-01T00:00:00.000Z' });
		expect(await live(a)).toMatchObject({ operator_reason: null, operator_by: null, operator_action: 'reschedule' });
	});
});
