/**
 * Priority Dequeue Trigger, Claim Tasks with Settle Tasks "When the Execution Finishes" (the node's
 * own trigger() against real Postgres; the done promise resolves with the run objects n8n hands
 * back): a succeeding run completes the claimed tasks in one call, a failing one fails them (an
 * attempt counted, retried, or dead at max attempts), a waiting run or no run leaves them
 * processing, a task the workflow completed itself stays completed, a succeeding run's tasks are
 * completed in the transaction of the next claim, and no execution starts in a freed slot before the
 * settle was sent and answered (the next execution sees the failed settle's warning). The default
 * ("By a Priority Dequeue node") settles nothing. Real n8n runs: test/e2e/trigger-settle.test.ts.
 */
import type { IDataObject, IRun } from 'n8n-workflow';
import { closeAllPools } from '../../../src/db/pool';
import { complete, enqueue } from '../../../src/queue';
import { activateTrigger, triggerCredentials, type ActiveTrigger, type Consumer } from '../../helpers/triggerHarness';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(60_000);

let db: QueueTestDb;
const active: ActiveTrigger[] = [];
beforeAll(async () => {
	db = await queueTestDb();
});
afterEach(async () => {
	await Promise.all(active.splice(0).map((t) => t.close()));
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const params = (queue: string, over: IDataObject = {}): IDataObject => ({
	queue,
	mode: 'claim',
	batchSize: 10,
	leaseSeconds: 300,
	useListen: false,
	pollSeconds: 1,
	maxInFlight: 1,
	settleTasks: 'onFinish',
	options: {},
	...over,
});

async function start(queue: string, consumer: Consumer, over: IDataObject = {}, credentials: IDataObject = {}): Promise<ActiveTrigger> {
	const t = await activateTrigger({ credentials: { ...triggerCredentials(db.schema), ...credentials }, parameters: params(queue, over), consumer });
	active.push(t);
	return t;
}

interface TaskRow {
	status: string;
	attempts: number;
	last_error: string | null;
}
/** The task's row: in queue_tasks while live, else in the archive. */
async function row(id: string): Promise<TaskRow & { where: string }> {
	const live = await db.pool.query<TaskRow>(`SELECT status, attempts, last_error FROM "${db.schema}".queue_tasks WHERE id = $1`, [id]);
	if (live.rows[0]) return { ...live.rows[0], where: 'queue' };
	const done = await db.pool.query<TaskRow>(`SELECT status, attempts, last_error FROM "${db.schema}".queue_tasks_archive WHERE id = $1`, [id]);
	return { ...done.rows[0], where: 'archive' };
}

const run = (status: string, extra: Partial<IRun> = {}): { run: IRun } => ({
	run: { status, finished: status === 'success', mode: 'trigger', startedAt: new Date(), data: { resultData: { runData: {} } }, ...extra } as unknown as IRun,
});

describe('Priority Dequeue Trigger: Settle Tasks When the Execution Finishes', () => {
	test('a succeeding run completes every claimed task of its execution', async () => {
		const queue = db.queueName('settle-ok');
		const ids = await db.fill(queue, 'normal', 3);
		const t = await start(queue, async () => 'success');
		await waitFor(async () => (await Promise.all(ids.map(row))).every((r) => r.where === 'archive'), { what: 'the three tasks archived' });
		for (const id of ids) expect(await row(id)).toMatchObject({ where: 'archive', status: 'succeeded', attempts: 1 });
		expect(t.emitted).toHaveLength(1);
		expect(t.emitted[0]).toHaveLength(3);
		expect(t.warnings).toEqual([]);
	});

	test('a succeeding run\'s tasks are completed in the transaction that claims the next execution\'s tasks; the last ones alone', async () => {
		const queue = db.queueName('settle-carried');
		const ids = await db.fill(queue, 'normal', 3);
		// While its execution runs, a task's row version is the one its claim wrote: its xmin is the
		// claim's transaction.
		const claimedBy = new Map<string, string>();
		const t = await start(
			queue,
			async (items) => {
				const id = String(items[0].json.taskId);
				const { rows } = await db.pool.query(`SELECT xmin::text AS xid FROM "${db.schema}".queue_tasks WHERE id = $1`, [id]);
				claimedBy.set(id, rows[0].xid);
				return 'success';
			},
			{ batchSize: 1, maxPerMinute: 6000 },
		);
		await waitFor(async () => (await Promise.all(ids.map(row))).every((r) => r.where === 'archive'), { what: 'the three tasks archived' });
		expect(t.emitted.map((e) => e[0].json.taskId)).toEqual(ids);
		expect(t.warnings).toEqual([]);
		// The archive row of each task was written by the transaction that claimed the next task.
		const { rows } = await db.pool.query<{ id: string; archived_by: string }>(
			`SELECT id::text, xmin::text AS archived_by FROM "${db.schema}".queue_tasks_archive WHERE id = ANY ($1::bigint[]) ORDER BY id`,
			[ids],
		);
		expect(rows.map((r) => r.id)).toEqual(ids);
		expect(rows[0].archived_by).toBe(claimedBy.get(ids[1]));
		expect(rows[1].archived_by).toBe(claimedBy.get(ids[2]));
		// The last one rode on a claim that found nothing: a transaction of its own.
		expect(rows[2].archived_by).not.toBe(rows[1].archived_by);
		expect([...claimedBy.values()]).not.toContain(rows[2].archived_by);
	});

	test('a failing run fails them with its error: retried while attempts remain, dead at max attempts', async () => {
		const queue = db.queueName('settle-err');
		const [retried] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', maxAttempts: 3 }]);
		const [dead] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', maxAttempts: 1 }]);
		await start(queue, async () => run('error', { data: { resultData: { runData: {}, error: { message: 'Work broke: boom' } } } } as unknown as Partial<IRun>));
		await waitFor(async () => (await row(retried.taskId)).status === 'pending' && (await row(dead.taskId)).status === 'dead', { what: 'the failed tasks settled' });
		expect(await row(retried.taskId)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'Work broke: boom' });
		expect(await row(dead.taskId)).toMatchObject({ status: 'dead', attempts: 1, last_error: 'Work broke: boom' });
	});

	test('crashed and canceled runs fail the task too (their status as the error when the run has none)', async () => {
		for (const status of ['crashed', 'canceled']) {
			const queue = db.queueName(`settle-${status}`);
			const [task] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', maxAttempts: 1 }]);
			const t = await start(queue, async () => run(status));
			await waitFor(async () => (await row(task.taskId)).status === 'dead', { what: `the ${status} run's task dead` });
			expect((await row(task.taskId)).last_error).toBe(`the execution ended with status ${status}`);
			await t.close();
		}
	});

	test('a waiting run, a running one and no run object leave the tasks processing (the lease decides), logged once each', async () => {
		const cases: Array<[string, () => Promise<{ run: IRun | undefined }>]> = [
			['waiting', async () => run('waiting', { waitTill: new Date(Date.now() + 3_600_000) })],
			['running', async () => run('running')],
			['no run', async () => ({ run: undefined })],
		];
		for (const [name, consumer] of cases) {
			const queue = db.queueName('settle-none');
			const [task] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal' }]);
			const t = await start(queue, consumer);
			// The log line is written after the decision, before the slot is freed.
			await waitFor(() => t.infos.some((m) => m.includes('left as claimed')), { what: `the ${name} case logged` });
			expect(t.infos.filter((m) => m.includes('left as claimed'))).toHaveLength(1);
			expect(await row(task.taskId)).toMatchObject({ where: 'queue', status: 'processing', attempts: 1 });
			await t.close();
		}
	});

	test('a done promise that rejects (n8n lost track of the execution) leaves the tasks processing, with a warning', async () => {
		const queue = db.queueName('settle-reject');
		const [task] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal' }]);
		const t = await start(queue, async () => ({ reject: new Error('The execution with the ID "7" does not exist.') }));
		await waitFor(() => t.warnings.some((m) => m.includes('n8n reported no run')), { what: 'the warning' });
		expect(t.warnings.filter((m) => m.includes('n8n reported no run'))).toHaveLength(1);
		expect(t.warnings[0]).toMatch(/does not exist.*1 task\(s\) left as claimed: their lease decides/);
		expect(await row(task.taskId)).toMatchObject({ where: 'queue', status: 'processing', attempts: 1 });
	});

	test('a task the workflow completed itself answers already_settled: left completed, logged at debug, no warning', async () => {
		const queue = db.queueName('settle-self');
		const [task] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal' }]);
		const t = await start(queue, async (items) => {
			await complete(db.pool, db.ledgerSchema, items.map((i) => ({ taskId: String(i.json.taskId), leaseToken: String(i.json.leaseToken) })));
			return 'success';
		});
		await waitFor(() => t.debugs.some((m) => m.includes('1 already_settled')), { what: 'the settle call' });
		expect(await row(task.taskId)).toMatchObject({ where: 'archive', status: 'succeeded' });
		expect(t.warnings).toEqual([]);
	});

	test('with one slot, the next execution starts only after the settle was answered (it rides on that execution\'s claim)', async () => {
		const queue = db.queueName('settle-slot');
		const ids = await db.fill(queue, 'normal', 2);
		const holder = await db.client();
		// Claims skip locked rows, so the consumer takes the row lock after the claim (the oldest task
		// first): the settle's complete (in the next claim's transaction, then alone) waits for it
		// until the Lock Timeout (300 ms) fails it, which is logged as a warning, and the claim goes
		// on alone. An execution started before the settle was answered would see no warning yet.
		let t: ActiveTrigger | undefined;
		const warningsSeenBySecond: string[][] = [];
		t = await start(
			queue,
			async (items) => {
				if (items[0].json.taskId === ids[0]) {
					await holder.query('BEGIN');
					await holder.query(`SELECT id FROM "${db.schema}".queue_tasks WHERE id = $1 FOR UPDATE`, [ids[0]]);
				} else warningsSeenBySecond.push([...(t?.warnings ?? [])]);
				return 'success';
			},
			{ batchSize: 1, maxPerMinute: 6000 },
			{ lockTimeoutMs: 300 },
		);
		await waitFor(async () => (await row(ids[1])).where === 'archive', { what: 'the second task completed' });
		await holder.query('ROLLBACK');
		expect(t.emitted.map((e) => e[0].json.taskId)).toEqual(ids);
		expect(warningsSeenBySecond).toHaveLength(1);
		expect(warningsSeenBySecond[0]).toHaveLength(1);
		expect(warningsSeenBySecond[0][0]).toMatch(new RegExp(`settling task ${ids[0]} after the execution finished failed`));
		// The first task keeps its lease (the failed settle changed nothing).
		expect(await row(ids[0])).toMatchObject({ where: 'queue', status: 'processing', attempts: 1 });
	});

	test('a settle call that fails is a warning, not an error thrown into n8n; the tasks keep their lease', async () => {
		const queue = db.queueName('settle-broken');
		const [task] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal' }]);
		// A lock timeout of 200 ms on the credential: the settle's complete, blocked by the row lock, gives up.
		const holder = await db.client();
		const t = await activateTrigger({
			credentials: { ...triggerCredentials(db.schema), lockTimeoutMs: 200 },
			parameters: params(queue),
			consumer: async (items) => {
				await holder.query('BEGIN');
				await holder.query(`SELECT id FROM "${db.schema}".queue_tasks WHERE id = $1 FOR UPDATE`, [String(items[0].json.taskId)]);
				return 'success';
			},
		});
		active.push(t);
		await waitFor(() => t.warnings.some((m) => m.includes('settling task') && m.includes('failed')), { what: 'the settle warning' });
		await holder.query('ROLLBACK');
		expect(await row(task.taskId)).toMatchObject({ where: 'queue', status: 'processing' });
	});

	test('default (By a Priority Dequeue node): a succeeding run settles nothing', async () => {
		const queue = db.queueName('settle-default');
		const [task] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal' }]);
		const t = await start(queue, async () => 'success', { settleTasks: undefined });
		await waitFor(() => t.emitted.length === 1, { what: 'the execution' });
		// Drained: after the execution's finish the watcher checks the queue (claims nothing more).
		await waitFor(async () => (await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%queue_wake_state%' AND state = 'idle'`)).rows[0].n >= 1, {
			what: 'the due check after the execution',
		});
		expect(await row(task.taskId)).toMatchObject({ where: 'queue', status: 'processing' });
	});
});
