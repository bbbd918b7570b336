/**
 * Aging: a group whose oldest ready task has waited n aging intervals competes n positions higher,
 * so a low-priority task is served within the aging bound even under a constant flood of high.
 */
import { dequeue, enqueue } from '../../../src/queue';
import { advanceQueueClock, queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
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
		const got = await dequeue(db.pool, db.schema, { queue, limit: 8, leaseSeconds: 600, agingSeconds });
		for (const t of got) {
			claims++;
			if (t.taskId === probe) return claims;
		}
	}
	throw new Error('probe never served');
}

describe('aging', () => {
	test('under a constant flood of high, an aged low task is served within the aging bound', async () => {
		// Aging interval 60 s; the low backlog waited 2 intervals + 5 s, so it competes as "high".
		// Bound: at the top position the oldest head wins, so the probe is served before any high
		// task that arrived after it: at most the 39 older low tasks go first.
		const withAging = await probeUnderFlood(60, 40, 125);
		expect(withAging).toBeLessThanOrEqual(40);
		// Control: without aging the same probe waits for its group's 1-in-6 share.
		const withoutAging = await probeUnderFlood(0, 40, 125);
		expect(withoutAging).toBeGreaterThan(200);
	});

	test('one interval of waiting raises a group by one position only', async () => {
		const queue = db.queueName('one-step');
		await db.fill(queue, 'high', 20);
		const low = await db.fill(queue, 'low', 5);
		// Low waited 1.5 intervals: it competes as "normal" (weight 2), not as "high".
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '90 seconds' WHERE id = ANY($1::bigint[])`, [low]);
		const got = await dequeue(db.pool, db.schema, { queue, limit: 7, leaseSeconds: 600, agingSeconds: 60 });
		// Smooth weighted round robin 5:2; as "low" (5:1) it would be hhhl..., as "high" lllll...
		expect(got.map((t) => t.group[0]).join('')).toBe('hlhhhlh');
		expect(got.filter((t) => t.group === 'low').every((t) => t.servedAs === 'normal')).toBe(true);
	});

	test('aging follows the database clock: a low task that waited two intervals beats fresh high work', async () => {
		const queue = db.queueName('clock');
		const [lowTask] = await enqueue(db.pool, db.schema, [{ queue, group: 'low', payload: { probe: true } }]);
		await advanceQueueClock(db.pool, db.schema, queue, 2.3); // two aging intervals of 1 s pass on the database clock
		await db.fill(queue, 'high', 20);
		const [first] = await dequeue(db.pool, db.schema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 1 });
		expect(first.taskId).toBe(lowTask.taskId);
		expect(first.servedAs).toBe('high');
		expect(first.waitedSeconds).toBeGreaterThanOrEqual(2);
	});

	test('without aging the same situation serves high first', async () => {
		const queue = db.queueName('clock-off');
		await enqueue(db.pool, db.schema, [{ queue, group: 'low', payload: {} }]);
		await db.fill(queue, 'high', 20);
		const [first] = await dequeue(db.pool, db.schema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 0 });
		expect(first.group).toBe('high');
	});
});
