/**
 * Issue 23, item 7: a dedupe key never swallows a new request into a task that can no longer run;
 * the lease-expiry sweep and the purge pass over rows held elsewhere instead of stopping at them;
 * a consumer that lists some groups finds its own due tasks whatever another group's backlog.
 */
import { Client } from 'pg';
import { dequeue, enqueue, release } from '../../../src/queue';
import { advanceQueueClock, setQueueClock, DATABASE_URL, queueTestDb, sleep, type QueueTestDb } from '../../helpers/db';

jest.setTimeout(120_000);

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
// The queue clock is the schema's: a test that moved it leaves it as it found it.
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await db.drop();
});

const task = async (id: string) => (await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE id = $1`, [id])).rows[0];
const liveOf = async (queue: string, key: string) =>
	(await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE queue = $1 AND dedupe_key = $2 AND status IN ('pending', 'processing')`, [queue, key])).rows;

describe('a dedupe key never joins a task that can no longer run', () => {
	it('the last attempt\'s lease expired: a new enqueue of the key becomes a new task, the old one goes dead saying why (it was answered "deduplicated")', async () => {
		const queue = db.queueName('dd-expired');
		const [first] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'invoice-42', maxAttempts: 1 }]);
		const [claimed] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 5 });
		expect(claimed.taskId).toBe(first.taskId);
		await advanceQueueClock(db.pool, db.schema, 10); // the worker died: its lease ran out, at attempt 1 of 1
		const [again] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'invoice-42', maxAttempts: 1 }]);
		expect(again.deduplicated).toBe(false);
		expect(again.taskId).not.toBe(first.taskId);
		expect(await task(first.taskId)).toMatchObject({ status: 'dead', dead_reason: 'lease_expired_at_max', lease_end: 'expired' });
		expect((await task(first.taskId)).last_error).toMatch(/lease expired at max attempts \(1 of 1\); found by an enqueue of its dedupe key, which became a new task/);
		// The new request runs.
		const [next] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 30 });
		expect(next).toMatchObject({ taskId: again.taskId, payload: { v: 2 } });
	});

	it('a pending task whose attempts are used up (released at its last attempt, counted) is replaced the same way', async () => {
		const queue = db.queueName('dd-exhausted');
		const [first] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', maxAttempts: 1 }]);
		const [c] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 30 });
		await release(db.pool, db.ledgerSchema, [{ taskId: c.taskId, leaseToken: c.leaseToken, countAttempt: true }]);
		expect(await task(first.taskId)).toMatchObject({ status: 'pending', attempts: 1, max_attempts: 1 });
		const [again] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k' }]);
		expect(again).toMatchObject({ deduplicated: false });
		expect(await task(first.taskId)).toMatchObject({ status: 'dead', dead_reason: 'attempts_exhausted' });
	});

	it('a task that can still run is joined as before: pending, or an expired lease with attempts left', async () => {
		const queue = db.queueName('dd-live');
		const [first] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: {}, dedupeKey: 'k', maxAttempts: 3 }]);
		expect((await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: {}, dedupeKey: 'k' }]))[0]).toMatchObject({ taskId: first.taskId, deduplicated: true });
		await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 5 });
		await advanceQueueClock(db.pool, db.schema, 10);
		expect((await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: {}, dedupeKey: 'k' }]))[0]).toMatchObject({ taskId: first.taskId, deduplicated: true });
		expect((await task(first.taskId)).status).toBe('processing');
	});

	it('the race: an enqueue of the key and a claim that sweeps the expired last attempt, at once, 20 times: the new request always has a task that can run', async () => {
		for (let round = 0; round < 20; round++) {
			const queue = db.queueName('dd-race');
			const [first] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', maxAttempts: 1 }]);
			await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 5 });
			await advanceQueueClock(db.pool, db.schema, 10);
			const [claims, [answer]] = await Promise.all([
				dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 30 }),
				enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', maxAttempts: 1 }]),
			]);
			// The old task went dead once, by the sweep or by the enqueue; the answer is a new task, live.
			expect(await task(first.taskId)).toMatchObject({ status: 'dead' });
			expect(answer.deduplicated).toBe(false);
			const live = await liveOf(queue, 'k');
			expect(live.map((t) => t.id)).toEqual([answer.taskId]);
			expect(live[0].attempts).toBeLessThanOrEqual(live[0].max_attempts);
			if (live[0].status === 'processing') expect(claims.map((t) => t.taskId)).toEqual([answer.taskId]);
		}
	});
});

/** A session that locks the rows `sql` selects until released. */
async function holdRows(sql: string, params: unknown[]) {
	const c = new Client({ connectionString: DATABASE_URL });
	await c.connect();
	await c.query('BEGIN');
	const { rowCount } = await c.query(sql, params);
	return {
		rowCount,
		async release() {
			await c.query('ROLLBACK').catch(() => undefined);
			await c.end();
		},
	};
}

describe('sweeps pass over rows held elsewhere', () => {
	it('the lease-expiry sweep: with the 1,000 oldest expired tasks locked elsewhere, the later expired tasks are still swept', async () => {
		const queue = db.queueName('sweep');
		await db.fill(queue, 'high', 1200);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1200, leaseSeconds: 5 })).toHaveLength(1200);
		await advanceQueueClock(db.pool, db.schema, 10);
		// Stagger the expiries so "the 1,000 oldest" are a definite set.
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET lease_expires_at = lease_expires_at + make_interval(secs => id % 1200 * 0.001) WHERE queue = $1`, [queue]);
		const held = await holdRows(
			`SELECT id FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'processing' ORDER BY lease_expires_at LIMIT 1000 FOR UPDATE`,
			[queue],
		);
		try {
			expect(held.rowCount).toBe(1000);
			// A claim sweeps first (queue_claim_full, queue_expire_leases with its limit of 1,000).
			const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 50, leaseSeconds: 30 });
			expect(got).toHaveLength(50);
			const { rows } = await db.pool.query(
				`SELECT count(*) FILTER (WHERE status = 'processing' AND lease_expires_at <= "${db.schema}".queue_now())::int AS expired,
				        count(*) FILTER (WHERE status = 'pending')::int AS pending
				   FROM "${db.schema}".queue_tasks WHERE queue = $1`,
				[queue],
			);
			expect(rows[0]).toEqual({ expired: 1000, pending: 150 });
		} finally {
			await held.release();
		}
	});

	it('the purge: with the oldest dead tasks locked elsewhere, the next ones are archived', async () => {
		const queue = db.queueName('purge');
		const ids = await db.fill(queue, 'high', 30, { maxAttempts: 1 });
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET status = 'dead', dead_at = now() - make_interval(days => 2, secs => id % 30), dead_reason = 'gave_up' WHERE queue = $1`, [queue]);
		const held = await holdRows(`SELECT id FROM "${db.schema}".queue_tasks WHERE queue = $1 ORDER BY dead_at LIMIT 10 FOR UPDATE`, [queue]);
		try {
			const { rows } = await db.pool.query(`SELECT * FROM "${db.schema}".queue_purge($1, 86400, NULL, 10)`, [queue]);
			expect(rows[0]).toEqual({ dead_archived: 10, archive_deleted: 0 });
		} finally {
			await held.release();
		}
		expect(ids).toHaveLength(30);
	});
});

describe('claims restricted to groups find due tasks of those groups', () => {
	it('a consumer of "vip" with 10,000 due untagged tasks in a group nobody lists: every claim returns vip tasks, and the other group is left untagged', async () => {
		const queue = db.queueName('groups');
		// Delayed tasks are tagged when due, by the first claim after that (queue_tag_due).
		await db.fill(queue, 'bulk', 10_000, { delaySeconds: 0.3 });
		await db.fill(queue, 'vip', 1000, { delaySeconds: 0.3 });
		await advanceQueueClock(db.pool, db.schema, 1); // the delay passes on the queue clock
		for (let claim = 0; claim < 5; claim++) {
			const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 30, groups: [{ name: 'vip', weight: 1 }] });
			expect(got.map((t) => t.group)).toEqual(Array(10).fill('vip'));
		}
		const { rows } = await db.pool.query(
			`SELECT priority_group AS g, count(*) FILTER (WHERE vtag IS NULL)::int AS untagged FROM "${db.schema}".queue_tasks WHERE queue = $1 GROUP BY 1 ORDER BY 1`,
			[queue],
		);
		expect(rows).toEqual([
			{ g: 'bulk', untagged: 10_000 },
			{ g: 'vip', untagged: 0 },
		]);
		// A consumer of bulk tags and claims its own.
		const bulk = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 30, groups: [{ name: 'bulk', weight: 1 }] });
		expect(bulk.map((t) => t.group)).toEqual(Array(10).fill('bulk'));
	});
});
