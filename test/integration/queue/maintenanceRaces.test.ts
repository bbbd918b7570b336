/**
 * Maintenance races: Requeue Dead never fails a batch on a dedupe clash (the clashing
 * task is skipped, the rest requeued), and no mix of concurrent maintenance and settle calls
 * deadlocks: requeue by id, requeue oldest, claims with expiry sweeps, complete, fail, release and
 * purge run together while every 40P01 (and any other error) is counted.
 */
import { complete, dequeue, enqueue, fail, purge, release, requeueDead } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(24);
});
afterAll(async () => {
	await db.drop();
});

/** Makes tasks dead at once (give up), with dead_at spread at random so "oldest" differs from id order. */
async function killAll(queue: string, limit: number) {
	const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds: 60, agingSeconds: 0 });
	await fail(db.pool, db.ledgerSchema, got.map((t) => ({ ...t, error: 'boom', giveUp: true })));
	// (This test helper locks its rows in id order too, like every statement of the queue.)
	await db.pool.query(
		`UPDATE "${db.schema}".queue_tasks SET dead_at = now() - random() * interval '1 hour'
		  WHERE id IN (SELECT id FROM "${db.schema}".queue_tasks WHERE id = ANY($1::bigint[]) AND status = 'dead' ORDER BY id FOR UPDATE)
		    AND status = 'dead'`,
		[got.map((t) => t.taskId)],
	);
	return got.map((t) => t.taskId);
}

describe('requeue dead under contention', () => {
	test('two dead tasks with one dedupe key, requeued by two calls at once: one requeued, one skipped, no 23505, the rest of each batch requeued', async () => {
		for (let round = 0; round < 10; round++) {
			const queue = db.queueName('clash');
			// Two lives of key K (dead one after the other), and two plain tasks.
			await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'K' }]);
			const [k1] = await killAll(queue, 1);
			await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'K' }, { queue, group: 'high' }, { queue, group: 'high' }]);
			const others = await killAll(queue, 10);
			const { rows: kr } = await db.pool.query(
				`SELECT id::text FROM "${db.schema}".queue_tasks WHERE queue = $1 AND dedupe_key = 'K' AND id <> $2`,
				[queue, k1],
			);
			const k2 = kr[0].id as string;
			const rest = [k2, ...others.filter((id) => id !== k2)];
			const [a, b] = await Promise.all([
				requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: [k1, rest[1]] }),
				requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: [rest[2], k2] }),
			]);
			const byId = new Map([...a, ...b].map((r) => [r.taskId, r.outcome]));
			expect([byId.get(k1), byId.get(k2)].sort()).toEqual(['requeued', 'skipped_live_duplicate']);
			expect(byId.get(rest[1])).toBe('requeued');
			expect(byId.get(rest[2])).toBe('requeued');
			const { rows } = await db.pool.query(
				`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 AND dedupe_key = 'K' AND status = 'pending'`,
				[queue],
			);
			expect(rows[0].n).toBe(1);
		}
	});

	test('a producer enqueues the key while Requeue Dead runs: the task is skipped when the producer commits, the batch goes on', async () => {
		const queue = db.queueName('producer');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'P' }, { queue, group: 'high' }]);
		const dead = await killAll(queue, 10);
		const producer = await db.client();
		await producer.query('BEGIN');
		await enqueue(producer, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'P' }]);
		const pending = requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: dead });
		// Proven by a state, not by sleeping: the requeue's backend waits on a lock (the producer's
		// uncommitted key) before the producer commits.
		const observer = await db.client();
		await waitFor(
			async () =>
				(
					await observer.query(
						`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%queue_requeue_dead%' AND datname = current_database()`,
					)
				).rows[0].n > 0,
			{ what: 'Requeue Dead to wait on the uncommitted key' },
		);
		await producer.query('COMMIT');
		const out = await pending;
		const byId = new Map(out.map((r) => [r.taskId, r]));
		const keyed = dead.find((id) => byId.get(id)?.outcome === 'skipped_live_duplicate');
		expect(keyed).toBeDefined();
		expect(byId.get(keyed as string)?.status).toBe('dead');
		expect(out.filter((r) => r.outcome === 'requeued')).toHaveLength(1);
	});
});

describe('no deadlocks', () => {
	test('requeue by id + requeue oldest + claims/expiry + complete/fail/release + purge at once for 8 s: zero 40P01, zero errors', async () => {
		const queue = db.queueName('mix');
		// 400 tasks; 1 in 4 share a dedupe key with another (clashes on requeue).
		const items = Array.from({ length: 400 }, (_, i) => ({ queue, group: ['high', 'normal', 'low'][i % 3], dedupeKey: i % 4 === 0 ? `k${i % 40}` : null }));
		await enqueue(db.pool, db.ledgerSchema, items.filter((it) => it.dedupeKey === null || Number(it.dedupeKey.slice(1)) % 1 === 0));
		await killAll(queue, 400);
		const errors: Record<string, number> = {};
		const count = (e: unknown) => {
			const code = (e as { code?: string }).code ?? String((e as Error).message);
			if (code === '40P01' && Object.keys(errors).length < 3) console.log((e as { detail?: string }).detail, (e as { where?: string }).where);
			errors[code] = (errors[code] ?? 0) + 1;
		};
		const until = Date.now() + 8000;
		const loop = (fn: () => Promise<unknown>) => async () => {
			while (Date.now() < until) await fn().catch(count);
		};
		const deadIds = async () => {
			const { rows } = await db.pool.query(`SELECT id::text FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'dead'`, [queue]);
			return rows.map((r) => r.id as string).sort(() => Math.random() - 0.5);
		};
		let claims = 0;
		let requeued = 0;
		let skipped = 0;
		// Purge and the dead-task source are paced by the others' progress, not by a clock: each
		// runs again once `progress()` has moved on by `step` since its last run (or the 8 s are up).
		const paced = (progress: () => number, step: number, what: string, fn: () => Promise<unknown>) => {
			let last = -Infinity;
			return async () => {
				await waitFor(() => progress() >= last + step || Date.now() >= until, { what, timeoutMs: 10_000, intervalMs: 5 });
				last = progress();
				await fn();
			};
		};
		const workers = [
			// Requeue by id: random subsets in random order.
			...Array.from({ length: 3 }, () =>
				loop(async () => {
					const ids = (await deadIds()).slice(0, 1 + Math.floor(Math.random() * 40));
					if (ids.length === 0) return; // none dead now: the next look is the next query
					for (const r of await requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: ids })) {
						if (r.outcome === 'requeued') requeued++;
						if (r.outcome === 'skipped_live_duplicate') skipped++;
					}
				}),
			),
			// Requeue oldest (dead_at order, not id order).
			...Array.from({ length: 3 }, () =>
				loop(async () => {
					for (const r of await requeueDead(db.pool, db.ledgerSchema, { queue, limit: 1 + Math.floor(Math.random() * 40) })) {
						if (r.outcome === 'requeued') requeued++;
						if (r.outcome === 'skipped_live_duplicate') skipped++;
					}
				}),
			),
			// Consumers: short leases (expiry sweeps), then complete, fail (give up or retry), release or walk away.
			...Array.from({ length: 4 }, () =>
				loop(async () => {
					const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1 + Math.floor(Math.random() * 30), leaseSeconds: 1, agingSeconds: 0 });
					claims += got.length;
					if (got.length === 0) return; // nothing claimable now: the next claim is the next try
					const shuffled = got.sort(() => Math.random() - 0.5);
					const q = Math.floor(shuffled.length / 4);
					await Promise.all([
						complete(db.pool, db.ledgerSchema, shuffled.slice(0, q)),
						fail(db.pool, db.ledgerSchema, shuffled.slice(q, 2 * q).map((t) => ({ ...t, error: 'x', giveUp: Math.random() < 0.7 }))),
						release(db.pool, db.ledgerSchema, shuffled.slice(2 * q, 3 * q)),
					]);
					// The last quarter is abandoned: its leases expire and the next claims sweep them.
				}),
			),
			// Purge: dead for more than 30 minutes (about half of them, dead_at is spread over an hour).
			loop(paced(() => requeued, 20, '20 more requeues before the next purge', () => purge(db.pool, db.ledgerSchema, { queue, deadAfterSeconds: 1800, limit: 20 }))),
			// Dead tasks keep coming: give up on some claims at once, with old dead_at again.
			loop(paced(() => claims, 20, '20 more claims before the next tasks are given up', () => killAll(queue, 20))),
		];
		await Promise.all(workers.map((w) => w()));
		expect(errors).toEqual({});
		expect(claims).toBeGreaterThan(100);
		expect(requeued).toBeGreaterThan(100);
		expect(skipped).toBeGreaterThanOrEqual(0);
	}, 60_000);
});
