/**
 * queue_claim's two paths (schema/functions/queue/queue_claim.sql): the one-statement fast path with
 * a plan cached per connection, and the full path (queue_claim_full) taken when something is
 * expired, untagged, reweighted or aged, or when the fast path came back short. Which path ran is
 * read from the transaction's own statistics (pg_stat_xact_user_functions with track_functions =
 * 'all'); how much of queue_tasks a claim read, from pg_stat_xact_user_tables. Both are counts of
 * this transaction only, so concurrent tests do not disturb them.
 */
import type { Client } from 'pg';
import { complete, dequeue, enqueue, extendLease, fail, release } from '../../../src/queue';
import { advanceQueueClock, setQueueClock, queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
let c: Client;
beforeAll(async () => {
	db = await queueTestDb(4);
	c = await db.client();
	await c.query("SET track_functions = 'all'");
});
// The queue clock is the schema's: a test that moved it leaves it as it found it.
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await db.drop();
});

const GROUPS = [
	{ name: 'high', weight: 5 },
	{ name: 'normal', weight: 2 },
	{ name: 'low', weight: 1 },
];

interface Run {
	claimed: string[];
	fullPathCalls: number;
	seqScans: number;
	seqRowsRead: number;
	indexRowsFetched: number;
}

/** This backend's not yet reported counts (pg_stat_xact_*: this transaction's, plus earlier ones not flushed yet). */
async function counters(): Promise<Omit<Run, 'claimed'>> {
	const { rows } = await c.query<{ calls: string; seq_scan: string; seq_tup_read: string; idx_tup_fetch: string }>(
		`SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions WHERE schemaname = $1 AND funcname = 'queue_claim_full')::text AS calls,
		        coalesce(t.seq_scan, 0)::text AS seq_scan, coalesce(t.seq_tup_read, 0)::text AS seq_tup_read, coalesce(t.idx_tup_fetch, 0)::text AS idx_tup_fetch
		   FROM (SELECT 1) one LEFT JOIN pg_stat_xact_user_tables t ON t.relid = $2::regclass`,
		[db.schema, `"${db.schema}".queue_tasks`],
	);
	const r = rows[0];
	return { fullPathCalls: Number(r.calls), seqScans: Number(r.seq_scan), seqRowsRead: Number(r.seq_tup_read), indexRowsFetched: Number(r.idx_tup_fetch) };
}

/**
 * One claim in its own transaction on the dedicated client; what it returned and what it read (the
 * counters read before and after it inside the transaction: nothing is reported in between).
 */
async function claim(queue: string, limit: number, agingSeconds = 300, groups = GROUPS): Promise<Run> {
	await c.query('BEGIN');
	try {
		const before = await counters();
		const tasks = await dequeue(c, db.ledgerSchema, { queue, limit, leaseSeconds: 300, groups, agingSeconds });
		const after = await counters();
		await c.query('COMMIT');
		return {
			claimed: tasks.map((x) => x.taskId),
			fullPathCalls: after.fullPathCalls - before.fullPathCalls,
			seqScans: after.seqScans - before.seqScans,
			seqRowsRead: after.seqRowsRead - before.seqRowsRead,
			indexRowsFetched: after.indexRowsFetched - before.indexRowsFetched,
		};
	} catch (e) {
		await c.query('ROLLBACK');
		throw e;
	}
}

/**
 * `n` pending tasks bulk-loaded like bench/queue-scale.mjs: the tags enqueue would give them (5:2:1,
 * round robin), all due 10 s ago.
 */
async function bulkBacklog(queue: string, n: number): Promise<void> {
	await db.pool.query(
		`INSERT INTO "${db.schema}".queue_tasks (queue, priority_group, status, payload, run_at, vtag)
		 SELECT $1, (ARRAY['high', 'normal', 'low'])[1 + g % 3], 'pending', '{}'::jsonb, now() - interval '10 seconds',
		        ((g + 2) / 3)::float8 / (ARRAY[5, 2, 1])[1 + g % 3]
		   FROM generate_series(1, $2::int) g`,
		[queue, n],
	);
}

/** 300 tasks, 100 per group, enqueued round robin (tagged at enqueue). */
async function backlog(queue: string): Promise<void> {
	const items = Array.from({ length: 300 }, (_, i) => ({ queue, group: GROUPS[i % 3].name, payload: { i } }));
	await enqueue(db.pool, db.ledgerSchema, items);
}

describe('queue_claim: fast path and full path', () => {
	test('common case: one statement, no full path; the first claim with new weights takes the full path', async () => {
		const queue = db.queueName('fast');
		await backlog(queue);
		// The weights are not recorded yet for this queue: the full path records them.
		expect((await claim(queue, 5)).fullPathCalls).toBe(1);
		const r = await claim(queue, 5);
		expect(r.claimed).toHaveLength(5);
		expect(r.fullPathCalls).toBe(0);
		// Other weights for the same groups: full path again (recorded, backlog re-tagged), then fast.
		const other = GROUPS.map((g) => ({ ...g, weight: g.name === 'high' ? 3 : g.weight }));
		const reweighed = await claim(queue, 5, 300, other);
		expect(reweighed.fullPathCalls).toBe(1);
		expect(reweighed.claimed).toHaveLength(5);
		expect((await claim(queue, 5, 300, other)).fullPathCalls).toBe(0);
	});

	test('the fast path gives the same order as the full path', async () => {
		const fastQ = db.queueName('order-fast');
		const fullQ = db.queueName('order-full');
		await backlog(fastQ);
		await backlog(fullQ);
		await claim(fastQ, 1); // records the weights
		const fast: string[] = [];
		const full: string[] = [];
		for (let i = 0; i < 12; i++) {
			const a = await claim(fastQ, 7);
			expect(a.fullPathCalls).toBe(0);
			fast.push(...a.claimed);
		}
		// The same claims through the full path directly (queue_claim_full takes validated input).
		const { rows } = await db.pool.query<{ priority_group: string }>(
			`SELECT priority_group FROM "${db.schema}".queue_claim_full($1, '{high,normal,low}', '{5,2,1}', 1, 300, 300)`,
			[fullQ],
		);
		expect(rows).toHaveLength(1);
		for (let i = 0; i < 12; i++) {
			const { rows: r } = await db.pool.query<{ priority_group: string }>(
				`SELECT priority_group FROM "${db.schema}".queue_claim_full($1, '{high,normal,low}', '{5,2,1}', 7, 300, 300)`,
				[fullQ],
			);
			full.push(...r.map((x) => x.priority_group));
		}
		const groupsOf = async (ids: string[]) => {
			const { rows: g } = await db.pool.query<{ id: string; priority_group: string }>(
				`SELECT id::text, priority_group FROM "${db.schema}".queue_tasks WHERE id = ANY($1::bigint[])`,
				[ids],
			);
			const m = new Map(g.map((x) => [x.id, x.priority_group]));
			return ids.map((id) => m.get(id));
		};
		expect(await groupsOf(fast)).toEqual(full);
		// 5:2:1 over the 84 claims after the first: 52/21/11 or within one of it.
		const count = (g: string) => full.filter((x) => x === g).length;
		expect(Math.abs(count('high') - (84 * 5) / 8)).toBeLessThanOrEqual(1.5);
	});

	test('an expired lease, an untagged due task, an aged task behind the head: the full path runs', async () => {
		// Expired lease: swept by the full path, the task claimed again.
		const q1 = db.queueName('expired');
		await backlog(q1);
		const first = [...(await claim(q1, 1, 0)).claimed]; // aging off: the clock moves 301 s below
		const fast = await claim(q1, 2, 0);
		expect(fast.fullPathCalls).toBe(0);
		first.push(...fast.claimed);
		await advanceQueueClock(db.pool, db.schema, 301); // the three leases ran out
		const afterExpiry = await claim(q1, 3, 0);
		expect(afterExpiry.fullPathCalls).toBe(1);
		// Expired tasks keep their tag (the front), so they are the ones claimed again.
		expect(afterExpiry.claimed.sort()).toEqual(first.sort());

		// Untagged due task (enqueued with a delay that has passed).
		const q2 = db.queueName('untagged');
		await backlog(q2);
		await claim(q2, 1);
		await enqueue(db.pool, db.ledgerSchema, [{ queue: q2, group: 'low', delaySeconds: 30, payload: { late: true } }]);
		expect((await claim(q2, 1)).fullPathCalls).toBe(0); // not due yet
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '1 second' WHERE queue = $1 AND vtag IS NULL`, [q2]);
		expect((await claim(q2, 1)).fullPathCalls).toBe(1);
		const { rows: untagged } = await db.pool.query(`SELECT 1 FROM "${db.schema}".queue_tasks WHERE queue = $1 AND vtag IS NULL`, [q2]);
		expect(untagged).toHaveLength(0);

		// Aging: the whole backlog waited past the 60 s interval; low's oldest is behind the head tag.
		const q3 = db.queueName('aged');
		await backlog(q3);
		await claim(q3, 1, 60);
		expect((await claim(q3, 1, 60)).fullPathCalls).toBe(0);
		await advanceQueueClock(db.pool, db.schema, 120);
		const aged = await claim(q3, 3, 60);
		expect(aged.fullPathCalls).toBe(1);
		// Aging off: the same queue takes the fast path.
		expect((await claim(q3, 3, 0)).fullPathCalls).toBe(0);
	});

	test('an old backlog: one sweep moves the aged tasks, the claims after it take the fast path until the sweep gap has passed', async () => {
		const queue = db.queueName('old-backlog');
		await backlog(queue); // ids in enqueue order: high, normal, low, high, ...
		await claim(queue, 1, 60); // records the weights
		await advanceQueueClock(db.pool, db.schema, 120); // all 299 waited past the 60 s interval
		const swept = await claim(queue, 3, 60);
		expect(swept.fullPathCalls).toBe(1);
		// The sweep moved every aged task behind the head (fewer than 1,000) to the head tag at once.
		const { rows: tags } = await db.pool.query<{ n: string }>(
			`SELECT count(DISTINCT vtag)::text AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'pending'`,
			[queue],
		);
		expect(tags[0].n).toBe('1');
		// Before migration 0010 each of these took the full path (one batch moved per claim).
		const order = [...swept.claimed];
		for (let i = 0; i < 30; i++) {
			const r = await claim(queue, 3, 60);
			expect(r.fullPathCalls).toBe(0);
			order.push(...r.claimed);
		}
		// FIFO among the moved tasks: claim order is id order.
		const ids = order.map(Number);
		expect(ids).toEqual([...ids].sort((a, b) => a - b));
		// New work that waits past the interval behind the head: once the gap (1 s for a 60 s
		// interval) has passed the next claim sweeps again, and the claims after it are fast again.
		// (While older moved tasks of a group are still at the head, that group's newer aged tasks
		// wait behind them anyway: FIFO. So drain the moved ones first.)
		await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1000, leaseSeconds: 300, groups: GROUPS, agingSeconds: 0 });
		await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'high', payload: { late: 1 } },
			{ queue, group: 'low', payload: { late: 2 } },
			{ queue, group: 'high', payload: { late: 3 } },
		]);
		await advanceQueueClock(db.pool, db.schema, 120);
		expect((await claim(queue, 1, 60)).fullPathCalls).toBe(1);
		expect((await claim(queue, 1, 60)).fullPathCalls).toBe(0);
	});

	test('a short batch and exhausted attempts: the full path serves the rest, never hands out a used-up task', async () => {
		const queue = db.queueName('short');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: {} }]);
		await claim(queue, 1, 300); // records the weights, claims the one task
		await enqueue(db.pool, db.ledgerSchema, [0, 1, 2].map((i) => ({ queue, group: 'high', payload: { i } })));
		const short = await claim(queue, 10);
		expect(short.claimed).toHaveLength(3);
		expect(short.fullPathCalls).toBe(1); // asked for 10, found 3: the full path looked for the rest

		const q2 = db.queueName('exhausted');
		const ids = (await enqueue(db.pool, db.ledgerSchema, [0, 1, 2, 3].map((i) => ({ queue: q2, group: 'high', payload: { i } })))).map((t) => t.taskId);
		await claim(q2, 1); // records the weights; claims ids[0]
		// ids[1] has used up its attempts (a release at its last attempt leaves it so).
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = max_attempts WHERE id = $1`, [ids[1]]);
		const r = await claim(q2, 2);
		expect(r.claimed).toEqual([ids[2], ids[3]]);
		const { rows } = await db.pool.query<{ status: string; dead_reason: string }>(
			`SELECT status, dead_reason FROM "${db.schema}".queue_tasks WHERE id = $1`,
			[ids[1]],
		);
		expect(rows[0]).toEqual({ status: 'dead', dead_reason: 'attempts_exhausted' });
	});

	test('the cached plan reads the head of the tag index, not the queue (20,000 pending)', async () => {
		const queue = db.queueName('plan');
		await bulkBacklog(queue, 20000);
		await db.pool.query(`ANALYZE "${db.schema}".queue_tasks`);
		await claim(queue, 1); // records the weights (full path)
		for (const limit of [1, 50, 1, 50]) {
			const r = await claim(queue, limit);
			expect(r.claimed).toHaveLength(limit);
			expect(r.fullPathCalls).toBe(0);
			expect(r.seqScans).toBe(0);
			expect(r.seqRowsRead).toBe(0);
			// The probes, the head entries and each claimed row by primary key: a few per claimed task,
			// far from the 20,000 a sort of the ready tasks would read.
			expect(r.indexRowsFetched).toBeLessThan(4 * limit + 20);
		}
		// A moved queue clock (queue_now() replaced: the cached plans are made again) reads the same way.
		await setQueueClock(db.pool, db.schema, 60);
		for (const limit of [1, 50]) {
			const r = await claim(queue, limit);
			expect(r.claimed).toHaveLength(limit);
			expect(r.fullPathCalls).toBe(0);
			expect(r.seqScans).toBe(0);
			expect(r.indexRowsFetched).toBeLessThan(4 * limit + 20);
		}
	});

	test("enqueue reads the queue's virtual time from the head of the tag index, also with a plan cached while the statistics said the queue was small", async () => {
		const queue = db.queueName('vtime');
		// Statistics taken while the queue is empty, then a backlog the planner does not know about:
		// the situation in which a generic plan read every ready task and sorted them (150 ms per
		// enqueue at 570,000 pending, before queue_vtime got the claim's planner settings).
		await db.pool.query(`ANALYZE "${db.schema}".queue_tasks`);
		await bulkBacklog(queue, 20000);
		const one = (n: number) => JSON.stringify([{ i: 0, q: queue, g: 'low', p: { n }, m: 5 }]);
		// Eight enqueues on one connection, the session asking for generic plans (what the default
		// plan_cache_mode settles on after five calls when the statistics say the queue is small).
		await c.query('SET plan_cache_mode = force_generic_plan');
		for (let n = 0; n < 8; n++) {
			await c.query('BEGIN');
			const before = await counters();
			const { rows } = await c.query(`SELECT * FROM "${db.schema}".queue_enqueue($1::jsonb)`, [one(n)]);
			const after = await counters();
			await c.query('COMMIT');
			expect(rows).toHaveLength(1);
			expect(after.seqScans - before.seqScans).toBe(0);
			// The virtual time (the head entry), the new row's unique checks: a handful, not 20,000.
			expect(after.indexRowsFetched - before.indexRowsFetched).toBeLessThan(20);
		}
		await c.query('RESET plan_cache_mode');
		// Whether a generic plan goes wrong depends on the statistics of the moment, which a test
		// cannot pin down: the guard is the function's own settings, the same as queue_claim's.
		const { rows: cfg } = await db.pool.query<{ proconfig: string[] }>(
			`SELECT proconfig FROM pg_proc WHERE proname = 'queue_vtime' AND pronamespace = $1::regnamespace`,
			[db.schema],
		);
		expect(cfg[0].proconfig).toEqual(
			expect.arrayContaining(['plan_cache_mode=force_generic_plan', 'enable_sort=off', 'enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off']),
		);
		const { rows: tagged } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 AND vtag IS NULL`, [queue]);
		expect(tagged[0].n).toBe(0);
	});

	test('complete, extend, release and fail read their rows by primary key, not every processing task (stale statistics)', async () => {
		const queue = db.queueName('complete');
		await db.pool.query(
			`INSERT INTO "${db.schema}".queue_tasks (queue, priority_group, status, payload, vtag)
			 SELECT $1, 'high', 'pending', '{}'::jsonb, g::float8 / 5 FROM generate_series(1, 3000) g`,
			[queue],
		);
		// Statistics taken while nothing was processing (as after a quiet night), then 2,000 claimed.
		await db.pool.query(`ANALYZE "${db.schema}".queue_tasks`);
		const held = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 2000, groups: [{ name: 'high', weight: 5 }] });
		expect(held).toHaveLength(2000);
		// Several calls on one connection: the cached plan is the one that matters.
		for (let i = 0; i < 8; i++) {
			await c.query('BEGIN');
			const before = await counters();
			const out = await complete(c, db.ledgerSchema, [held[i]]);
			const after = await counters();
			await c.query('COMMIT');
			expect(out.map((r) => r.outcome)).toEqual(['completed']);
			expect(after.seqRowsRead - before.seqRowsRead).toBe(0);
			expect(after.indexRowsFetched - before.indexRowsFetched).toBeLessThan(10);
		}
		const settles: Array<[string, (i: number) => Promise<Array<{ outcome: string }>>]> = [
			['extended', (i) => extendLease(c, db.ledgerSchema, [{ ...held[i], leaseSeconds: 600 }])],
			['released', (i) => release(c, db.ledgerSchema, [{ ...held[i], delaySeconds: 0 }])],
			['retry_scheduled', (i) => fail(c, db.ledgerSchema, [{ ...held[i], error: 'x' }], { baseSeconds: 1, capSeconds: 10 })],
		];
		let i = 8;
		for (const [outcome, settle] of settles) {
			for (let k = 0; k < 6; k++, i++) {
				await c.query('BEGIN');
				const before = await counters();
				const out = await settle(i);
				const after = await counters();
				await c.query('COMMIT');
				expect(out.map((r) => r.outcome)).toEqual([outcome]);
				expect(after.seqRowsRead - before.seqRowsRead).toBe(0);
				// Labelled, so a failure says which settle read too much.
				expect([outcome, after.indexRowsFetched - before.indexRowsFetched < 10]).toEqual([outcome, true]);
			}
		}
	});
});
