/**
 * Issue 12: queue_enqueue is set-based. Its cost per item does not grow with the batch (the old
 * one joined the inserted rows back with a nested loop: 20k items took 38 s), and a dedupe key
 * whose live task settles while the batch runs is inserted again rather than left unanswered.
 */
import { complete, dequeue, enqueue } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

jest.setTimeout(120_000);
let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(6);
});
afterAll(async () => {
	await db.drop();
});

async function timePerItem(n: number, keyed: boolean): Promise<number> {
	const queue = db.queueName(keyed ? 'lin-k' : 'lin');
	const items = Array.from({ length: n }, (_, i) => ({ queue, group: 'normal', payload: { i }, ...(keyed ? { dedupeKey: `k-${i % (n / 2)}` } : {}) }));
	const t = performance.now();
	const out = await enqueue(db.pool, db.schema, items);
	const ms = performance.now() - t;
	expect(out).toHaveLength(n);
	if (keyed) expect(out.filter((r) => r.deduplicated)).toHaveLength(n / 2);
	return ms / n;
}

describe('enqueue is linear', () => {
	it.each([false, true])('cost per item at 20,000 items is within 4x of 2,000 items (dedupe keys: %p)', async (keyed) => {
		await timePerItem(2_000, keyed); // warm-up
		const small = await timePerItem(2_000, keyed);
		const large = await timePerItem(20_000, keyed);
		expect(large / small).toBeLessThan(4);
	});
});

describe('a live task that settles during the batch', () => {
	it('every item is answered, one live task per key, while a worker keeps completing the key', async () => {
		const queue = db.queueName('race');
		let stop = false;
		const worker = (async () => {
			while (!stop) {
				const got = await dequeue(db.pool, db.schema, { queue, limit: 5, leaseSeconds: 30, groups: [{ name: 'normal', weight: 1 }] });
				if (got.length) await complete(db.pool, db.schema, got.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
			}
		})();
		try {
			for (let round = 0; round < 150; round++) {
				const out = await enqueue(db.pool, db.schema, [
					{ queue, group: 'normal', payload: { round }, dedupeKey: 'hot' },
					{ queue, group: 'normal', payload: { round }, dedupeKey: 'hot' },
					{ queue, group: 'normal', payload: { round } },
				]);
				expect(out).toHaveLength(3);
				expect(out[0].taskId).toBe(out[1].taskId);
				expect(out[1].deduplicated).toBe(true);
			}
		} finally {
			stop = true;
			await worker;
		}
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 AND dedupe_key = 'hot' AND status IN ('pending', 'processing')`, [queue]);
		expect(rows[0].n).toBeLessThanOrEqual(1);
	});
});
