/**
 * Strict priority: a priority group marked strict always goes first. Its ready tasks are
 * claimed oldest first (run_at, id) before any weighted group's, strict groups among themselves in
 * list order; the weighted claim takes the rest of the batch. Checked against the claim without
 * strict (the same tasks come out in another order), under 4 concurrent claimers, with a paused
 * strict group, after an expired lease, and through the Priority Groups parameter of the Dequeue node
 * and of the trigger.
 */
import type { IDataObject } from 'n8n-workflow';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { dequeue, pause, type ClaimedTask, type GroupWeight } from '../../../src/queue';
import { closeAllPools } from '../../../src/db/pool';
import { advanceQueueClock, DATABASE_URL, queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';
import { activateTrigger, triggerCredentials, type ActiveTrigger } from '../../helpers/triggerHarness';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(90_000);

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
const active: ActiveTrigger[] = [];
afterEach(async () => {
	await Promise.all(active.splice(0).map((t) => t.close()));
	await setQueueClock(db.pool, db.schema, 0);
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const claim = (queue: string, groups: GroupWeight[], limit = 10) => dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds: 60, agingSeconds: 0, groups });
const ids = (tasks: ClaimedTask[]) => tasks.map((t) => t.taskId);

describe('strict priority groups', () => {
	test('a strict task enqueued after waiting weighted tasks is claimed first; without strict it waits behind them', async () => {
		for (const strict of [false, true]) {
			const queue = db.queueName('s-first');
			const low = await db.fill(queue, 'low', 3);
			const high = await db.fill(queue, 'high', 2);
			const groups = [{ name: 'high', weight: 1, strict }, { name: 'low', weight: 1 }];
			const first = [...(await claim(queue, groups, 1)), ...(await claim(queue, groups, 1))];
			// By tag the low tasks (enqueued first) go first; strict puts high ahead.
			expect(ids(first)).toEqual(strict ? high : low.slice(0, 2));
			const rest = await claim(queue, groups, 10);
			expect(rest).toHaveLength(3);
		}
	});

	test('two strict groups are served in list order, each oldest first, then the weighted group', async () => {
		const queue = db.queueName('s-rank');
		const a = await db.fill(queue, 'a', 2);
		const b = await db.fill(queue, 'b', 2);
		const c = await db.fill(queue, 'c', 2);
		const got = await claim(queue, [
			{ name: 'c', weight: 1 },
			{ name: 'b', weight: 1, strict: true },
			{ name: 'a', weight: 1, strict: true },
		]);
		expect(ids(got)).toEqual([...b, ...a, ...c]);
		const seqs = got.map((t) => BigInt(t.claimSeq));
		expect(seqs).toEqual([...seqs].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
		expect(got.every((t) => t.attempt === 1 && t.leaseToken)).toBe(true);
	});

	test('the rest of a batch after the strict tasks goes by the weighted shares; weights of strict groups are not recorded', async () => {
		// The same backlog in two queues, one with strict tasks besides: the weighted part of the batch
		// is the same sequence of groups as a claim of the weighted groups alone (and 3:1 mostly).
		const weightedOnly = [{ name: 'x', weight: 3 }, { name: 'y', weight: 1 }];
		const groups = [{ name: 's', weight: 7, strict: true }, ...weightedOnly];
		const setup = async (queue: string, g: GroupWeight[]) => {
			// A first claim records the weights, so the backlog below is tagged with them at enqueue.
			await db.fill(queue, 'x', 1);
			await db.fill(queue, 'y', 1);
			expect(await claim(queue, g, 2)).toHaveLength(2);
			await db.fill(queue, 'x', 12);
			await db.fill(queue, 'y', 12);
		};
		const queue = db.queueName('s-share');
		const plain = db.queueName('s-share-plain');
		await setup(queue, groups);
		await setup(plain, weightedOnly);
		const s = await db.fill(queue, 's', 2);
		const got = await claim(queue, groups, 10);
		expect(ids(got.slice(0, 2))).toEqual(s);
		const rest = got.slice(2).map((t) => t.group);
		expect(rest).toEqual((await claim(plain, weightedOnly, 8)).map((t) => t.group));
		expect(rest.filter((g) => g === 'y').length).toBeGreaterThanOrEqual(1);
		expect(rest.filter((g) => g === 'x').length).toBeGreaterThanOrEqual(5);
		const w = await db.pool.query(`SELECT priority_group FROM "${db.schema}".queue_group_weights WHERE queue = $1 ORDER BY 1`, [queue]);
		expect(w.rows.map((r) => r.priority_group)).toEqual(['x', 'y']);
		// A batch the strict group fills alone claims nothing weighted.
		const s2 = await db.fill(queue, 's', 3);
		expect(ids(await claim(queue, groups, 3))).toEqual(s2);
	});

	test('4 concurrent claimers: no task twice, and every strict task is claimed before any weighted task (all enqueued earlier)', async () => {
		const queue = db.queueName('s-conc');
		const weighted = new Set([...(await db.fill(queue, 'w1', 30)), ...(await db.fill(queue, 'w2', 30))]);
		const strict = new Set(await db.fill(queue, 's', 30));
		const groups = [{ name: 's', weight: 1, strict: true }, { name: 'w1', weight: 2 }, { name: 'w2', weight: 1 }];
		const all: ClaimedTask[] = [];
		// Each claim's time span, by task: a weighted task may carry a lower claim_seq than a strict one
		// only when the two claims ran at the same time (SKIP LOCKED: the strict row was being taken by
		// the other claim), never when the strict task's claim started after the weighted one's ended.
		const span = new Map<string, [number, number]>();
		await Promise.all(
			[0, 1, 2, 3].map(async () => {
				for (;;) {
					const t0 = performance.now();
					const got = await claim(queue, groups, 3);
					const t1 = performance.now();
					if (got.length === 0) return;
					for (const t of got) span.set(t.taskId, [t0, t1]);
					// Within one claim every strict task comes before every weighted one.
					const kinds = got.map((t) => (strict.has(t.taskId) ? 0 : 1));
					expect(kinds).toEqual([...kinds].sort());
					all.push(...got);
				}
			}),
		);
		expect(all).toHaveLength(90);
		expect(new Set(ids(all)).size).toBe(90);
		const seqOf = (set: Set<string>) => all.filter((t) => set.has(t.taskId)).map((t) => BigInt(t.claimSeq));
		const strictSeqs = seqOf(strict);
		const weightedSeqs = seqOf(weighted);
		expect(strictSeqs).toHaveLength(30);
		expect(weightedSeqs).toHaveLength(60);
		const late: string[] = [];
		for (const st of all.filter((t) => strict.has(t.taskId)))
			for (const wt of all.filter((t) => weighted.has(t.taskId)))
				if (BigInt(wt.claimSeq) < BigInt(st.claimSeq)) {
					const [ws, we] = span.get(wt.taskId)!;
					const [ss, se] = span.get(st.taskId)!;
					if (ss > we || ws > se) late.push(`weighted ${wt.taskId} (seq ${wt.claimSeq}) before strict ${st.taskId} (seq ${st.claimSeq}) in claims that did not overlap`);
				}
		expect(late).toEqual([]);
	});

	test('a paused strict group yields nothing; the weighted groups are claimed as usual; a claim of only the paused strict group is empty', async () => {
		const queue = db.queueName('s-pause');
		const s = await db.fill(queue, 's', 2);
		const w = await db.fill(queue, 'w', 2);
		await pause(db.pool, db.ledgerSchema, [{ queue, group: 's', reason: 'test', by: 'jest' }]);
		const groups = [{ name: 's', weight: 1, strict: true }, { name: 'w', weight: 1 }];
		expect(ids(await claim(queue, groups))).toEqual(w);
		expect(await claim(queue, [{ name: 's', weight: 1, strict: true }])).toEqual([]);
		const left = await db.pool.query(`SELECT id::text FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'pending' ORDER BY id`, [queue]);
		expect(left.rows.map((r) => r.id)).toEqual(s);
	});

	test('a strict task at its last attempt goes dead (attempts_exhausted), never handed out, and the batch is filled from the next one', async () => {
		const queue = db.queueName('s-dead');
		const [spent] = await db.fill(queue, 's', 1, { maxAttempts: 1 });
		const [next] = await db.fill(queue, 's', 1);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = 1 WHERE id = $1`, [spent]);
		const got = await claim(queue, [{ name: 's', weight: 1, strict: true }], 1);
		expect(ids(got)).toEqual([next]);
		const r = await db.pool.query(`SELECT status, dead_reason FROM "${db.schema}".queue_tasks WHERE id = $1`, [spent]);
		expect(r.rows[0]).toEqual({ status: 'dead', dead_reason: 'attempts_exhausted' });
	});

	test('a strict task whose lease expired is served again before a weighted task (the sweep runs before the strict step)', async () => {
		const queue = db.queueName('s-expired');
		const groups = [{ name: 's', weight: 1, strict: true }, { name: 'w', weight: 1 }];
		const [s] = await db.fill(queue, 's', 1);
		expect(ids(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 5, agingSeconds: 0, groups }))).toEqual([s]);
		await db.fill(queue, 'w', 2);
		await advanceQueueClock(db.pool, db.schema, 6);
		const got = await claim(queue, groups, 1);
		expect(ids(got)).toEqual([s]);
		expect(got[0].attempt).toBe(2);
	});

	test('SQL: strict names must be distinct listed groups (22023, nothing claimed); the six-argument call still works, one queue_claim exists', async () => {
		const queue = db.queueName('s-sql');
		await db.fill(queue, 'a', 1);
		const call = (strict: string[] | null) =>
			db.pool.query(`SELECT * FROM "${db.schema}".queue_claim($1, '{a,b}', '{1,1}', 10, 60, 0, $2::text[])`, [queue, strict]);
		await expect(call(['c'])).rejects.toMatchObject({ code: '22023' });
		await expect(call(['a', 'a'])).rejects.toMatchObject({ code: '22023' });
		await expect(call([null as unknown as string])).rejects.toMatchObject({ code: '22023' });
		const six = await db.pool.query(`SELECT * FROM "${db.schema}".queue_claim($1, '{a,b}', '{1,1}', 10, 60, 0)`, [queue]);
		expect(six.rows).toHaveLength(1);
		const fns = await db.pool.query(`SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'queue_claim' AND pronamespace = $1::regnamespace`, [db.schema]);
		expect(fns.rows[0].n).toBe(1);
	});

	test('the Dequeue node reads Strict (Always First) from its Priority Groups rows', async () => {
		const queue = db.queueName('s-node');
		await db.fill(queue, 'low', 2);
		const high = await db.fill(queue, 'high', 1);
		const out = await new PriorityDequeue().execute.call(
			fakeExecute({
				items: [{ json: {} }],
				params: {
					resource: 'task',
					operation: 'dequeue',
					queue,
					batchSize: 1,
					leaseSeconds: 60,
					options: { agingSeconds: 0 },
					priorityGroups: { group: [{ name: 'low', weight: 1 }, { name: 'high', weight: 1, strict: true }] },
				},
				credentials: testCredentials(DATABASE_URL, db.schema),
			}),
		);
		expect(out[1].map((it) => (it.json as IDataObject).taskId)).toEqual(high);
	});

	test('the trigger\'s Claim Tasks serves a strict group first (the shared Priority Groups parameter)', async () => {
		const queue = db.queueName('s-trigger');
		await db.fill(queue, 'low', 2);
		const high = await db.fill(queue, 'high', 1);
		const t = await activateTrigger({
			credentials: triggerCredentials(db.schema),
			parameters: {
				queue, mode: 'claim', batchSize: 1, leaseSeconds: 60, useListen: false, pollSeconds: 1, maxInFlight: 1,
				priorityGroups: { group: [{ name: 'low', weight: 1 }, { name: 'high', weight: 1, strict: true }] }, options: { agingSeconds: 0 },
			},
			consumer: async () => 'success',
		});
		active.push(t);
		await waitFor(() => t.emitted.length > 0, { what: 'the first claim', timeoutMs: 10_000 });
		expect(t.emitted[0].map((i) => i.json.taskId)).toEqual(high);
	});
});
