/**
 * Pause and Resume: a queue or one priority group, with a reason and who. While paused,
 * claims (fast path and full path) take nothing of it, enqueues are taken, held leases keep working,
 * the trigger starts no execution for it; Resume notifies the queue's channel and a resumed group
 * takes its weighted share from then on (no burst from its old tags). Raced against 4 concurrent
 * claimers and against a trigger's claims: nothing is claimed after the pause committed.
 */
import type { IDataObject } from 'n8n-workflow';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { complete, dequeue, enqueue, extendLease, fail, pause, preparePauseInput, resume, stats, type ClaimedTask } from '../../../src/queue';
import { closeAllPools } from '../../../src/db/pool';
import { InputError } from '../../../src/errors';
import { advanceQueueClock, DATABASE_URL, queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';
import { activateTrigger, triggerCredentials, type ActiveTrigger } from '../../helpers/triggerHarness';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(90_000);

let db: QueueTestDb;
const active: ActiveTrigger[] = [];
beforeAll(async () => {
	db = await queueTestDb(12);
});
afterEach(async () => {
	await Promise.all(active.splice(0).map((t) => t.close()));
	await setQueueClock(db.pool, db.schema, 0);
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const two = [
	{ name: 'a', weight: 1 },
	{ name: 'b', weight: 1 },
];
const claim = (queue: string, limit = 10, groups = two, leaseSeconds = 60) => dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds, groups });
const groupsOf = (tasks: ClaimedTask[]) => tasks.map((t) => t.group);
const processing = async (queue: string) =>
	Number((await db.pool.query(`SELECT count(*) FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'processing'`, [queue])).rows[0].count);

/** When a trigger's queue_wake_state query last ended, if after `t` (pg_stat_activity); else null. */
async function wakeCheckEndedAfter(t: Date): Promise<Date | null> {
	const { rows } = await db.pool.query<{ at: Date | null }>(
		`SELECT max(state_change) AS at FROM pg_stat_activity
		  WHERE application_name = 'n8n-nodes-operation-ledger' AND state = 'idle' AND query LIKE '%queue_wake_state%' AND state_change > $1`,
		[t],
	);
	return rows[0].at;
}

describe('pause and resume', () => {
	test('a paused group is not claimed (the other group is), its enqueues are taken; Resume gives it back; both recorded with reason and who', async () => {
		const queue = db.queueName('p-group');
		await db.fill(queue, 'a', 3);
		await db.fill(queue, 'b', 3);
		const [p] = await pause(db.pool, db.ledgerSchema, [{ queue, group: 'a', reason: 'vendor outage', by: 'alice' }]);
		expect(p).toMatchObject({ queue, group: 'a', outcome: 'paused', pausedBy: 'alice', reason: 'vendor outage', untagged: 3 });
		// A second pause keeps the first one's reason and who.
		expect((await pause(db.pool, db.ledgerSchema, [{ queue, group: 'a', reason: 'again', by: 'bob' }]))[0]).toMatchObject({ outcome: 'already_paused', pausedBy: 'alice', reason: 'vendor outage', pausedAt: p.pausedAt });
		// Enqueues are still taken.
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'a', payload: { late: true } }]);
		const got = await claim(queue, 10);
		expect(groupsOf(got)).toEqual(['b', 'b', 'b']);
		expect(await claim(queue, 10)).toEqual([]);
		// A claim listing only the paused group takes nothing, and leaves nothing behind.
		expect(await claim(queue, 10, [{ name: 'a', weight: 1 }])).toEqual([]);
		const s = await stats(db.pool, db.ledgerSchema, queue);
		expect(s.paused).toEqual([{ group: 'a', pausedAt: p.pausedAt, pausedBy: 'alice', reason: 'vendor outage' }]);
		expect(s.groups.find((g) => g.group === 'a')?.ready).toBe(4);

		const [r] = await resume(db.pool, db.ledgerSchema, [{ queue, group: 'a', reason: 'vendor back', by: 'carol' }]);
		expect(r).toMatchObject({ queue, group: 'a', outcome: 'resumed', pausedAt: p.pausedAt, pausedBy: 'alice', untagged: 4 });
		expect((await resume(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]))[0]).toMatchObject({ outcome: 'not_paused', pausedAt: null });
		expect(groupsOf(await claim(queue, 10))).toEqual(['a', 'a', 'a', 'a']);
		expect((await stats(db.pool, db.ledgerSchema, queue)).paused).toEqual([]);
		const { rows } = await db.pool.query(`SELECT priority_group, action, by_whom, reason FROM "${db.schema}".queue_pause_events WHERE queue = $1 ORDER BY id`, [queue]);
		expect(rows).toEqual([
			{ priority_group: 'a', action: 'paused', by_whom: 'alice', reason: 'vendor outage' },
			{ priority_group: 'a', action: 'resumed', by_whom: 'carol', reason: 'vendor back' },
		]);
	});

	test('a paused queue: no claim on the fast path nor on the full path (an expired lease waiting); held leases complete, extend and fail as usual', async () => {
		const queue = db.queueName('p-queue');
		await db.fill(queue, 'a', 6);
		const held = await claim(queue, 3);
		expect(held).toHaveLength(3);
		expect((await pause(db.pool, db.ledgerSchema, [{ queue, reason: 'maintenance' }]))[0]).toMatchObject({ group: null, outcome: 'paused', untagged: 0 });
		expect(await claim(queue, 10)).toEqual([]);
		// The holders keep working.
		expect((await extendLease(db.pool, db.ledgerSchema, [{ taskId: held[0].taskId, leaseToken: held[0].leaseToken, leaseSeconds: 120 }]))[0].outcome).toBe('extended');
		expect((await complete(db.pool, db.ledgerSchema, [{ taskId: held[0].taskId, leaseToken: held[0].leaseToken }]))[0].outcome).toBe('completed');
		expect((await fail(db.pool, db.ledgerSchema, [{ taskId: held[1].taskId, leaseToken: held[1].leaseToken, error: 'boom', retryDelay: 'fixed', fixedDelaySeconds: 0 }]))[0].outcome).toBe('retry_scheduled');
		// An expired lease sends the claim to its full path: still nothing.
		await advanceQueueClock(db.pool, db.schema, 600);
		expect(await claim(queue, 10)).toEqual([]);
		expect(await processing(queue)).toBe(1);
		// A group pause outlives a queue resume; a queue resume does not end a group pause.
		await pause(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]);
		expect((await resume(db.pool, db.ledgerSchema, [{ queue }]))[0].outcome).toBe('resumed');
		expect(await claim(queue, 10)).toEqual([]);
		expect((await stats(db.pool, db.ledgerSchema, queue)).paused.map((p) => p.group)).toEqual(['a']);
		await resume(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]);
		// Five left: two never claimed, the failed retry and the expired lease (swept now), plus... the completed one is gone.
		expect((await claim(queue, 10)).length).toBe(5);
	});

	test('4 claimers and a pause: no claim that starts after the pause committed takes a task; after Resume they drain the queue, no task twice', async () => {
		const queue = db.queueName('p-race');
		const TASKS = 400;
		const ids = await db.fill(queue, 'a', TASKS);
		let pausedAt = Infinity;
		let stop = false;
		const taken: { startedAt: number; tasks: ClaimedTask[] }[] = [];
		let firstClaim: () => void = () => {};
		const claimedOnce = new Promise<void>((resolve) => (firstClaim = resolve));
		const claimer = async () => {
			while (!stop) {
				const startedAt = performance.now();
				const tasks = await claim(queue, 2, [{ name: 'a', weight: 1 }]);
				taken.push({ startedAt, tasks });
				if (tasks.length > 0) firstClaim();
				else await new Promise((r) => setImmediate(r)); // an empty claim yields (no wait) and tries again
			}
		};
		const claimers = Array.from({ length: 4 }, claimer);
		await claimedOnce;
		await pause(db.pool, db.ledgerSchema, [{ queue, reason: 'race' }]);
		pausedAt = performance.now();
		const atPause = await processing(queue);
		// Let the claimers run on for a while against the paused queue.
		await waitFor(() => taken.filter((t) => t.startedAt > pausedAt).length >= 40, { what: '40 claims after the pause', timeoutMs: 30_000 });
		const after = taken.filter((t) => t.startedAt > pausedAt);
		expect(after.flatMap((t) => t.tasks)).toEqual([]);
		expect(await processing(queue)).toBe(atPause);
		expect(atPause).toBeGreaterThan(0);
		expect(atPause).toBeLessThan(TASKS);
		await resume(db.pool, db.ledgerSchema, [{ queue }]);
		await waitFor(async () => (await processing(queue)) === TASKS, { what: 'every task claimed after the resume', timeoutMs: 30_000 });
		stop = true;
		await Promise.all(claimers);
		const all = taken.flatMap((t) => t.tasks.map((x) => x.taskId));
		expect(all).toHaveLength(TASKS);
		expect(new Set(all)).toEqual(new Set(ids));
	});

	test('fairness after a group resume: a paused group takes its weighted share from the resume on, no burst from its old tags', async () => {
		const queue = db.queueName('p-fair');
		await db.fill(queue, 'a', 100);
		await db.fill(queue, 'b', 400);
		// Both groups served 1 : 1 before the pause (a's first task leads: b was tagged from it).
		expect(groupsOf(await claim(queue, 20)).filter((g) => g === 'a')).toHaveLength(11);
		await pause(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]);
		// a takes enqueues at once (tagged from the virtual time of the pause), then b alone is served
		// while a is paused: b's tags move 200 past every tag a holds. Kept, those tags (its backlog's
		// before the pause, or these) would hand a the next 40 claims and more.
		await db.fill(queue, 'a', 50);
		expect(groupsOf(await claim(queue, 200))).toEqual(Array(200).fill('b'));
		await resume(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]);
		// One at a time, as a single consumer would: a and b alternate (equal weights) from the resume.
		const next: string[] = [];
		for (let k = 0; k < 40; k++) next.push(...groupsOf(await claim(queue, 1)));
		const aShare = next.filter((g) => g === 'a').length;
		expect(aShare).toBeGreaterThanOrEqual(19);
		expect(aShare).toBeLessThanOrEqual(21);
		// And with weights 3 : 1 after a second pause and resume, the share follows the weights.
		const w31 = [
			{ name: 'a', weight: 3 },
			{ name: 'b', weight: 1 },
		];
		await claim(queue, 1, w31);
		await pause(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]);
		await claim(queue, 30, w31);
		await resume(db.pool, db.ledgerSchema, [{ queue, group: 'a' }]);
		const batch = groupsOf(await claim(queue, 40, w31));
		expect(batch.filter((g) => g === 'a').length).toBeGreaterThanOrEqual(29);
		expect(batch.filter((g) => g === 'a').length).toBeLessThanOrEqual(31);
	});

	test('Pause input: a queue name, a group name or none; reason and who cut to their limits; bad ones are InputError', () => {
		expect(() => preparePauseInput({ queue: '' })).toThrow(InputError);
		expect(() => preparePauseInput({ queue: 'q', group: 'a\u0000b' })).toThrow(InputError);
		expect(preparePauseInput({ queue: 'q', group: '' }).group).toBeNull();
		expect(preparePauseInput({ queue: 'q', reason: 'x'.repeat(5000), by: 'y'.repeat(100) })).toMatchObject({ reason: 'x'.repeat(2000), by: 'y'.repeat(60) });
	});
});

describe('pause and the Priority Dequeue Trigger', () => {
	test('pause during a trigger\'s claims (Claim Tasks): nothing is claimed after the pause committed; Resume wakes it by NOTIFY', async () => {
		const queue = db.queueName('p-trig');
		const TASKS = 300;
		await db.fill(queue, 'a', TASKS);
		let firstBatch: () => void = () => {};
		const started = new Promise<void>((resolve) => (firstBatch = resolve));
		const t = await activateTrigger({
			credentials: triggerCredentials(db.schema),
			// Poll once a minute: after the resume only the notification can wake it in time.
			parameters: { queue, mode: 'claim', batchSize: 2, leaseSeconds: 60, useListen: true, pollSeconds: 60, maxInFlight: 3, maxPerMinute: 6000, priorityGroups: { group: [{ name: 'a', weight: 1 }] }, options: {} },
			consumer: async (items) => {
				firstBatch();
				await complete(db.pool, db.ledgerSchema, items.map((i) => ({ taskId: String(i.json.taskId), leaseToken: String(i.json.leaseToken) })));
				return 'success';
			},
		});
		active.push(t);
		await started;
		await pause(db.pool, db.ledgerSchema, [{ queue, reason: 'stop the trigger' }]);
		const emittedAtPause = t.emitted.flat().length;
		// Claimed so far: live tasks with an attempt and archived (completed) ones, in one statement (two
		// would count a task its consumer completes in between twice).
		const claimedCount = async () =>
			(
				await db.pool.query(
					`SELECT (SELECT count(*) FROM "${db.schema}".queue_tasks WHERE queue = $1 AND attempts > 0)::int + (SELECT count(*) FROM "${db.schema}".queue_tasks_archive WHERE queue = $1)::int AS n`,
					[queue],
				)
			).rows[0].n as number;
		const claimedAtPause = await claimedCount();
		expect(claimedAtPause).toBeGreaterThan(0);
		expect(claimedAtPause).toBeLessThan(TASKS);
		// Every claim committed before the pause did is emitted (the trigger hands out what it claimed);
		// after it, the trigger's wake-ups claim nothing: its next due check ends and nothing more came.
		// The barrier: a task enqueued into the paused queue notifies the trigger, whose due check then
		// ends after it (the trigger's own last check may have ended before this point, and its poll is
		// a minute away).
		const mark = new Date();
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'a', payload: { marker: true } }]);
		await waitFor(async () => (await wakeCheckEndedAfter(mark)) !== null, { what: 'the due check the notification after the pause caused', timeoutMs: 10_000 });
		await waitFor(() => t.emitted.flat().length === claimedAtPause, { what: 'the claims committed before the pause to be emitted', timeoutMs: 10_000 });
		expect(emittedAtPause).toBeLessThanOrEqual(claimedAtPause);
		expect(await claimedCount()).toBe(claimedAtPause);
		expect(t.emitted.flat()).toHaveLength(claimedAtPause);
		await resume(db.pool, db.ledgerSchema, [{ queue, reason: 'go on' }]);
		await waitFor(() => t.emitted.flat().length === TASKS + 1, { what: 'the trigger to drain the queue (and the marker) after the resume', timeoutMs: 20_000 });
		expect(new Set(t.emitted.flat().map((i) => i.json.taskId)).size).toBe(TASKS + 1);
	});

	test('Wake Up: a paused group starts no execution, even when its enqueue notifies; Resume starts one at once', async () => {
		const queue = db.queueName('p-wake');
		await pause(db.pool, db.ledgerSchema, [{ queue, group: 'vip' }]);
		const t = await activateTrigger({
			credentials: triggerCredentials(db.schema),
			parameters: { queue, mode: 'wakeUp', useListen: true, pollSeconds: 60, maxInFlight: 1, priorityGroups: { group: [{ name: 'vip', weight: 1 }] }, options: {} },
			consumer: async () => 'success',
		});
		active.push(t);
		const mark = new Date();
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'vip', payload: {} }]);
		await waitFor(async () => (await wakeCheckEndedAfter(mark)) !== null, { what: 'the check the notification caused', timeoutMs: 10_000 });
		expect(t.executions).toHaveLength(0);
		await resume(db.pool, db.ledgerSchema, [{ queue, group: 'vip' }]);
		await waitFor(() => t.executions.length === 1, { what: 'an execution after the resume', timeoutMs: 10_000 });
	});
});

describe('Pause and Resume: the node', () => {
	test('one output item per input item on Result, a bad item on Unrecorded; Stats says what is paused', async () => {
		const queue = db.queueName('p-node');
		await db.fill(queue, 'a', 2);
		const groups = ['a', 'bad\u0000group', ''];
		const run = (operation: string, extra: IDataObject = {}) =>
			new PriorityDequeue().execute.call(
				fakeExecute({
					items: groups.map(() => ({ json: {} })),
					params: { resource: 'queue', operation, queue, pauseGroup: (i: number) => groups[i], pauseReason: 'from the form', pausedBy: 'alice', ...extra },
					credentials: testCredentials(DATABASE_URL, db.schema),
					continueOnFail: true,
				}),
			);
		const [unrecorded, result] = await run('pause');
		expect(unrecorded.map((it) => (it.pairedItem as { item: number }).item)).toEqual([1]);
		expect(result.map((it) => [it.json.group, it.json.outcome, it.json.pausedBy, (it.pairedItem as { item: number }).item])).toEqual([
			['a', 'paused', 'alice', 0],
			[null, 'paused', 'alice', 2],
		]);
		const statsOut = await new PriorityDequeue().execute.call(
			fakeExecute({ items: [{ json: {} }], params: { resource: 'queue', operation: 'stats', queue }, credentials: testCredentials(DATABASE_URL, db.schema) }),
		);
		expect((statsOut[1][0].json.paused as IDataObject[]).map((p) => p.group)).toEqual([null, 'a']);
		const [, resumed] = await run('resume');
		expect(resumed.map((it) => it.json.outcome)).toEqual(['resumed', 'resumed']);
		expect(await claim(queue, 10)).toHaveLength(2);
	});
});
