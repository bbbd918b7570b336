/**
 * Aging (docs/queue.md, "Scheduling"): a task of a listed group that has waited longer than the aging
 * interval is moved to the front (the queue's head tag), FIFO among the moved tasks, so a low-priority
 * task is served within the aging bound even under a constant flood of high.
 */
import { dequeue, enqueue } from '../../../src/queue';
import { advanceQueueClock, setQueueClock, queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
// The queue clock is the schema's: a test that moved it leaves it as it found it.
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await db.drop();
});

/**
 * Backlog of `lowCount` low tasks that became available `agedBySeconds` ago, then rounds of: enqueue
 * 8 fresh high tasks (the flood), claim 8. Returns the claim number (1-based) of the last low task.
 */
async function probeUnderFlood(agingSeconds: number, lowCount: number, agedBySeconds: number): Promise<number> {
	const queue = db.queueName('flood');
	await db.fill(queue, 'high', 200);
	const lowIds = await db.fill(queue, 'low', lowCount);
	// Simulate the wait without sleeping: the low tasks became available agedBySeconds ago.
	await db.pool.query(
		`UPDATE "${db.schema}".queue_tasks SET run_at = now() - make_interval(secs => $2) WHERE id = ANY($1::bigint[])`,
		[lowIds, agedBySeconds],
	);
	const probe = lowIds[lowIds.length - 1];
	let claims = 0;
	for (let round = 0; round < 200; round++) {
		await db.fill(queue, 'high', 8);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 8, leaseSeconds: 600, agingSeconds });
		for (const t of got) {
			claims++;
			if (t.taskId === probe) return claims;
		}
	}
	throw new Error('probe never served');
}

describe('aging', () => {
	test('under a constant flood of high, an aged low task is served within the aging bound', async () => {
		// Aging interval 60 s; the low backlog waited 125 s. The first claim's sweep moves every aged
		// task behind the head (up to 1,000) to the front (the head tag), so the 40 low tasks go out
		// first, FIFO, whatever the flood: the probe (the last low task) within 80 claims.
		const withAging = await probeUnderFlood(60, 40, 125);
		expect(withAging).toBeLessThanOrEqual(80);
		// Control: without aging the probe waits for its tag (its group's 1-in-6 share).
		const withoutAging = await probeUnderFlood(0, 40, 125);
		expect(withoutAging).toBeGreaterThan(200);
	});

	test('only tasks that waited longer than the interval move; they go to the front in FIFO order', async () => {
		const queue = db.queueName('front');
		await db.fill(queue, 'high', 20);
		const low = await db.fill(queue, 'low', 5);
		// Low waited 30 s of a 60 s interval: nothing moves, the tag order holds (high .2 .4 ... 1.2, low 1.2 2.2 ...; ties by id).
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '30 seconds' WHERE id = ANY($1::bigint[])`, [low]);
		const first = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 7, leaseSeconds: 600, agingSeconds: 60 });
		expect(first.map((t) => t.group[0]).join('')).toBe('hhhhhhl');
		// Now the rest of low waited 90 s: all four move to the front (the head tag), ahead of the
		// 14 high tasks left, in FIFO order.
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '90 seconds' WHERE id = ANY($1::bigint[])`, [low]);
		const next = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 6, leaseSeconds: 600, agingSeconds: 60 });
		// The head (a high task) keeps its place; the moved tasks tie with it and follow by id.
		expect(next.map((t) => t.group[0]).join('')).toBe('hllllh');
		expect(next.filter((t) => t.group === 'low').map((t) => t.taskId)).toEqual(low.slice(1));
		expect(next.every((t) => t.servedAs === t.group)).toBe(true);
	});

	test('aging follows the database clock: low tasks that waited two intervals beat fresh high work', async () => {
		const queue = db.queueName('clock');
		await db.fill(queue, 'high', 20);
		const low = await db.fill(queue, 'low', 10); // tags 1.2 .. 10.2
		await advanceQueueClock(db.pool, db.schema, 2.3); // two aging intervals of 1 s pass on the database clock
		await db.fill(queue, 'high', 20); // fresh, tags 4.2 .. 8.2: ahead of most of low by tag
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 40, leaseSeconds: 60, agingSeconds: 1 });
		// Everything that waited moved to the front in id order: 20 old high, then the 10 low; fresh high last.
		expect(got.map((t) => t.group[0]).join('')).toBe('h'.repeat(20) + 'l'.repeat(10) + 'h'.repeat(10));
		const probe = got.find((t) => t.taskId === low[9]);
		expect(probe?.waitedSeconds).toBeGreaterThanOrEqual(2);
	});

	test('a sweep moves up to 1,000 aged tasks at once, oldest first; a group another claim is sweeping is skipped, never waited for', async () => {
		const queue = db.queueName('sweep');
		await db.fill(queue, 'high', 10);
		const low = await db.fill(queue, 'low', 1200);
		await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 60 }); // records the weights
		await advanceQueueClock(db.pool, db.schema, 120);
		// Another transaction holds the groups' rows (as a sweep in progress would): this claim skips
		// the sweep, does not wait for the lock, and serves by tag.
		const holder = await db.client();
		await holder.query('BEGIN');
		await holder.query(`SELECT 1 FROM "${db.schema}".queue_group_weights WHERE queue = $1 FOR NO KEY UPDATE`, [queue]);
		const started = Date.now();
		const skipped = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 2, leaseSeconds: 60, agingSeconds: 60 });
		expect(Date.now() - started).toBeLessThan(2000); // the credential's lock timeout is 5 s
		expect(skipped.map((t) => t.group)).toEqual(['high', 'high']);
		await holder.query('ROLLBACK');
		// Now the sweep runs: the oldest 1,000 aged tasks behind the head move to the head tag.
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 60, agingSeconds: 60 });
		const { rows } = await db.pool.query<{ vtag: number; n: string }>(
			`SELECT vtag, count(*)::text AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'pending' GROUP BY vtag ORDER BY vtag LIMIT 1`,
			[queue],
		);
		// At the head tag: the head itself and the 1,000 moved, less the 5 claimed since (the other
		// 200 aged low tasks wait for the next sweep).
		expect(Number(rows[0].n)).toBe(1 + 1000 - 5);
		// FIFO: the high tasks left (enqueued first), then low in id order.
		const next = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60, agingSeconds: 60 });
		const ids = [...got, ...next].map((t) => Number(t.taskId));
		expect(ids).toEqual([...ids].sort((a, b) => a - b));
		expect(got.every((t) => t.group === 'high')).toBe(true);
		const lowServed = next.filter((t) => t.group === 'low').map((t) => t.taskId);
		expect(lowServed.length).toBeGreaterThanOrEqual(5);
		expect(lowServed).toEqual(low.slice(0, lowServed.length));
	});

	test('without aging the same situation serves by tag: fresh high before the last low tasks', async () => {
		const queue = db.queueName('clock-off');
		await db.fill(queue, 'high', 20);
		const low = await db.fill(queue, 'low', 10);
		await db.fill(queue, 'high', 20);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 50, leaseSeconds: 60, agingSeconds: 0 });
		const pos = got.findIndex((t) => t.taskId === low[9]);
		expect(pos).toBe(49);
	});
});
