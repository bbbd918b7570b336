/**
 * Issue 15's targets for the fair queue with concurrent consumers (tags decided at enqueue, claims
 * overlapping; docs/queue.md "Scheduling"):
 *   - with every group backlogged, 5:2:1 shares within ±2 percentage points over EVERY window of 800
 *     consecutive claims (by claim sequence), with 4 and with 10 concurrent consumers, and with
 *     producers enqueueing while the consumers claim;
 *   - work-conserving: a lone group gets every claim; a group that runs dry leaves its share to the others;
 *   - aging with 4 consumers: a task that waited past the aging interval is served within one more.
 */
import { dequeue, enqueue, type ClaimedTask } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(14);
});
afterAll(async () => {
	await db.drop();
});

const WEIGHTS: Record<string, number> = { high: 5, normal: 2, low: 1 };
const TOTAL = 8;

/** `consumers` concurrent loops claiming random batches of 1 to `maxBatch` until `target` are claimed. */
async function drain(queue: string, target: number, consumers: number, maxBatch: number, agingSeconds = 0): Promise<ClaimedTask[]> {
	const claimed: ClaimedTask[] = [];
	const loop = async () => {
		while (claimed.length < target) {
			const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1 + Math.floor(Math.random() * maxBatch), leaseSeconds: 600, agingSeconds });
			if (got.length === 0) return;
			claimed.push(...got);
		}
	};
	await Promise.all(Array.from({ length: consumers }, loop));
	return claimed.sort((a, b) => Number(a.claimSeq) - Number(b.claimSeq));
}

/** The largest deviation (percentage points) of any group's share from its weight over every window of `size`. */
function worstWindow(claimed: ClaimedTask[], size: number): number {
	const groups = Object.keys(WEIGHTS);
	const count: Record<string, number> = Object.fromEntries(groups.map((g) => [g, 0]));
	let worst = 0;
	for (let i = 0; i < claimed.length; i++) {
		count[claimed[i].group]++;
		if (i >= size) count[claimed[i - size].group]--;
		if (i >= size - 1) for (const g of groups) worst = Math.max(worst, Math.abs(count[g] / size - WEIGHTS[g] / TOTAL) * 100);
	}
	return worst;
}

describe('fair queue with concurrent consumers', () => {
	for (const consumers of [4, 10]) {
		test(`every window of 800 claims within ±2 pp of 5:2:1 with ${consumers} consumers (backlog)`, async () => {
			const queue = db.queueName(`fair${consumers}`);
			// Enough of each group for 4000 claims at 5:2:1 (2500 / 1000 / 500), interleaved batches.
			for (let b = 0; b < 6; b++) {
				await db.fill(queue, 'high', 500);
				await db.fill(queue, 'normal', 200);
				await db.fill(queue, 'low', 100);
			}
			const claimed = (await drain(queue, 4000, consumers, 50)).slice(0, 4000);
			expect(claimed).toHaveLength(4000);
			expect(new Set(claimed.map((t) => t.taskId)).size).toBe(4000);
			const worst = worstWindow(claimed, 800);
			expect(worst).toBeLessThanOrEqual(2);
		}, 120_000);
	}

	test('every window of 800 claims within ±2 pp with 4 consumers while producers keep enqueueing', async () => {
		const queue = db.queueName('fair-live');
		await db.fill(queue, 'high', 300);
		await db.fill(queue, 'normal', 120);
		await db.fill(queue, 'low', 60);
		let producing = true;
		// Producers add work faster than it is claimed in every group's ratio... and more: each group
		// stays backlogged (equal counts per group, so low and normal pile up).
		const producer = async (group: string) => {
			while (producing) {
				await enqueue(db.pool, db.ledgerSchema, Array.from({ length: 40 }, (_, i) => ({ queue, group, payload: { i } })));
			}
		};
		const producers = Promise.all(['high', 'normal', 'low', 'high', 'high'].map(producer));
		const claimed = (await drain(queue, 4000, 4, 20)).slice(0, 4000);
		producing = false;
		await producers;
		expect(claimed).toHaveLength(4000);
		expect(worstWindow(claimed, 800)).toBeLessThanOrEqual(2);
	}, 120_000);

	test('work-conserving: a lone group gets every claim; a group that runs dry leaves its share to the others', async () => {
		const solo = db.queueName('solo');
		await db.fill(solo, 'low', 600);
		const all = await drain(solo, 600, 10, 20);
		expect(all).toHaveLength(600);
		expect(all.every((t) => t.group === 'low')).toBe(true);

		const queue = db.queueName('dry');
		await db.fill(queue, 'high', 100);
		await db.fill(queue, 'normal', 600);
		await db.fill(queue, 'low', 600);
		const claimed = await drain(queue, 1000, 4, 20);
		// high (100 tasks) is gone after about 160 claims; from then on normal and low share 2:1.
		const after = claimed.slice(300, 900);
		expect(after.some((t) => t.group === 'high')).toBe(false);
		const normal = after.filter((t) => t.group === 'normal').length;
		expect(Math.abs(normal / after.length - 2 / 3) * 100).toBeLessThanOrEqual(2);
	}, 120_000);

	test('aging with 4 consumers: low tasks that waited past the interval are served within one more interval', async () => {
		const queue = db.queueName('aging4');
		await db.fill(queue, 'high', 3000);
		const low = await db.fill(queue, 'low', 600);
		// The last 20 low tasks (tags far behind 2,000 high ones) became available 3 s ago; interval 2 s.
		const aged = low.slice(-20);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '3 seconds' WHERE id = ANY($1::bigint[])`, [aged]);
		const started = Date.now();
		const servedAt = new Map<string, number>();
		const loop = async () => {
			while (servedAt.size < aged.length && Date.now() - started < 20_000) {
				const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 600, agingSeconds: 2 });
				for (const t of got) if (aged.includes(t.taskId)) servedAt.set(t.taskId, Date.now() - started);
			}
		};
		await Promise.all(Array.from({ length: 4 }, loop));
		expect(servedAt.size).toBe(aged.length);
		expect(Math.max(...servedAt.values())).toBeLessThan(2000);
	}, 60_000);
});
