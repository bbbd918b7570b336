/**
 * Issue 12: queue_enqueue is set-based (the old one joined the inserted rows back with a nested
 * loop: 20k items took 38 s). Every item of a large batch is answered, and a dedupe key whose live
 * task settles while the batch runs is inserted again rather than left unanswered.
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

async function enqueueMany(n: number, keyed: boolean) {
	const queue = db.queueName(keyed ? 'lin-k' : 'lin');
	const items = Array.from({ length: n }, (_, i) => ({ queue, group: 'normal', payload: { i }, ...(keyed ? { dedupeKey: `k-${i % (n / 2)}` } : {}) }));
	return { queue, out: await enqueue(db.pool, db.ledgerSchema, items) };
}

// Its speed (cost per item flat from 10k to 100k items) is measured by the batch-scale suite of
// `npm run bench`, which prints the figures (BENCHMARKS.md); a test does not time it.
describe('a 20,000-item enqueue answers every item', () => {
	it.each([false, true])('in input order, one task per dedupe key (dedupe keys: %p)', async (keyed) => {
		const n = 20_000;
		const { queue, out } = await enqueueMany(n, keyed);
		expect(out).toHaveLength(n);
		expect(out.every((r, i) => r !== undefined && (r.payload as { i: number }).i === (keyed && i >= n / 2 ? i - n / 2 : i))).toBe(true);
		expect(out.filter((r) => r.deduplicated)).toHaveLength(keyed ? n / 2 : 0);
		const { rows } = await db.pool.query(`SELECT count(*)::int AS c FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows[0].c).toBe(keyed ? n / 2 : n);
		if (keyed) for (let i = 0; i < n / 2; i += 997) expect(out[i + n / 2].taskId).toBe(out[i].taskId);
	});
});

describe('a live task that settles during the batch', () => {
	it('every item is answered, one live task per key, while a worker keeps completing the key', async () => {
		const queue = db.queueName('race');
		let stop = false;
		const worker = (async () => {
			while (!stop) {
				const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 30, groups: [{ name: 'normal', weight: 1 }] });
				if (got.length) await complete(db.pool, db.ledgerSchema, got.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
			}
		})();
		try {
			for (let round = 0; round < 150; round++) {
				const out = await enqueue(db.pool, db.ledgerSchema, [
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
