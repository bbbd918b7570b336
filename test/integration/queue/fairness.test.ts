/**
 * Weighted fair queuing across groups (tags decided at enqueue, docs/queue.md "Scheduling"): shares
 * follow the weights within one task per cycle across concurrent consumers; an empty group's share
 * goes to the others; FIFO within a group. Larger windows and 10 consumers: fairness-concurrent.test.ts.
 */
import { dequeue, type ClaimedTask } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
afterAll(async () => {
	await db.drop();
});

const WEIGHTS: Record<string, number> = { high: 5, normal: 2, low: 1 };
const CYCLE = 8;

/** Claims with `consumers` concurrent loops of random batch sizes until `target` tasks are claimed. */
async function drain(queue: string, target: number, consumers: number, extra: { agingSeconds?: number } = {}) {
	const claimed: ClaimedTask[] = [];
	let total = 0;
	const loop = async () => {
		while (total < target) {
			const got = await dequeue(db.pool, db.ledgerSchema, {
				queue,
				limit: 1 + Math.floor(Math.random() * 8),
				leaseSeconds: 600,
				agingSeconds: extra.agingSeconds ?? 0,
			});
			if (got.length === 0) return;
			total += got.length;
			claimed.push(...got);
		}
	};
	await Promise.all(Array.from({ length: consumers }, loop));
	return claimed.sort((a, b) => Number(a.claimSeq) - Number(b.claimSeq));
}

describe('weighted fair dequeue', () => {
	test('with every group backlogged, each group gets its weight per cycle (±2) across 4 concurrent consumers', async () => {
		const queue = db.queueName('fair');
		// More backlog than the measured window, so every group stays backlogged throughout.
		const ids = {
			high: await db.fill(queue, 'high', 900),
			normal: await db.fill(queue, 'normal', 400),
			low: await db.fill(queue, 'low', 200),
		};
		const cycles = 100;
		const claimed = (await drain(queue, cycles * CYCLE, 4)).slice(0, cycles * CYCLE);
		expect(claimed).toHaveLength(cycles * CYCLE);
		// Claim sequence numbers are unique (one sequence; concurrent claims may leave gaps).
		expect(new Set(claimed.map((t) => t.claimSeq)).size).toBe(cycles * CYCLE);

		// Start-time fair queuing's own bound is one task per group per cycle; concurrent claims add
		// one more, since two claims locking rows at the same moment may draw their sequence numbers in
		// either order (docs/queue.md), which can move a task across a cycle boundary. (±1 failed under
		// load on a shared machine; the target, every 800-claim window within ±2 pp with 4 and
		// 10 consumers, is fairness-concurrent.test.ts.)
		for (let c = 0; c < cycles; c++) {
			const window = claimed.slice(c * CYCLE, (c + 1) * CYCLE);
			for (const g of Object.keys(WEIGHTS)) {
				const n = window.filter((t) => t.group === g).length;
				expect(Math.abs(n - WEIGHTS[g])).toBeLessThanOrEqual(2);
			}
		}
		// Every prefix stays within three tasks of the ideal share (one for the scheduler, up to two
		// for sequence numbers drawn out of order by concurrent claims).
		const seen: Record<string, number> = { high: 0, normal: 0, low: 0 };
		claimed.forEach((t, i) => {
			seen[t.group]++;
			for (const g of Object.keys(WEIGHTS)) expect(Math.abs(seen[g] - ((i + 1) * WEIGHTS[g]) / CYCLE)).toBeLessThan(3);
		});
		for (const g of Object.keys(WEIGHTS)) expect(Math.abs(seen[g] - 100 * WEIGHTS[g])).toBeLessThanOrEqual(2);

		// FIFO within each group, as far as concurrent claims allow: what a group gave out is exactly the
		// head of its enqueue order (no task overtaken and left behind), and a task's place in claim
		// order is off its enqueue rank by less than what the other consumers can take at the same
		// moment (3 consumers x 8 tasks). Exact order across concurrent claims is not defined: a claim
		// draws its sequence number right after locking a row, and another claim can lock and draw in
		// between (the CI run of 2026-11-30 saw task 129 behind 130 and 131). Strict FIFO for one
		// consumer: the next test.
		for (const g of Object.keys(WEIGHTS) as Array<keyof typeof ids>) {
			const order = claimed.filter((t) => t.group === g).map((t) => t.taskId);
			expect([...order].sort((a, b) => Number(a) - Number(b))).toEqual(ids[g].slice(0, order.length));
			order.forEach((id, i) => expect(Math.abs(ids[g].indexOf(id) - i)).toBeLessThan(3 * 8));
		}
		// No task was handed out twice.
		expect(new Set(claimed.map((t) => t.taskId)).size).toBe(claimed.length);
	});

	test('one consumer claims each group in exact enqueue order, whatever its batch sizes', async () => {
		const queue = db.queueName('fifo');
		const ids = {
			high: await db.fill(queue, 'high', 120),
			normal: await db.fill(queue, 'normal', 60),
			low: await db.fill(queue, 'low', 30),
		};
		const claimed = await drain(queue, 210, 1);
		expect(claimed).toHaveLength(210);
		for (const g of Object.keys(WEIGHTS) as Array<keyof typeof ids>) {
			expect(claimed.filter((t) => t.group === g).map((t) => t.taskId)).toEqual(ids[g]);
		}
	});

	test("an empty group's share goes to the others (work-conserving)", async () => {
		const queue = db.queueName('wc');
		await db.fill(queue, 'high', 300);
		await db.fill(queue, 'low', 100);
		// normal is empty: high and low share 5:1.
		const claimed = await drain(queue, 120, 4);
		const first = claimed.slice(0, 120);
		const high = first.filter((t) => t.group === 'high').length;
		const low = first.filter((t) => t.group === 'low').length;
		expect(high + low).toBe(120);
		expect(Math.abs(high - 100)).toBeLessThanOrEqual(1);
		expect(Math.abs(low - 20)).toBeLessThanOrEqual(1);
	});

	test('when only one group has work, every slot goes to it', async () => {
		const queue = db.queueName('solo');
		await db.fill(queue, 'low', 30);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 25, leaseSeconds: 60, agingSeconds: 0 });
		expect(got).toHaveLength(25);
		expect(new Set(got.map((t) => t.group))).toEqual(new Set(['low']));
		expect(new Set(got.map((t) => t.servedAs))).toEqual(new Set(['low']));
	});

	test('custom groups and weights; groups not listed are not claimed', async () => {
		const queue = db.queueName('custom');
		await db.fill(queue, 'vip', 50);
		await db.fill(queue, 'bulk', 50);
		await db.fill(queue, 'other', 10);
		const groups = [
			{ name: 'vip', weight: 3 },
			{ name: 'bulk', weight: 1 },
		];
		// The tasks were tagged with weight 1 each (groups no Dequeue had named yet); the claim records
		// 3:1 and re-tags the backlog to it (queue_set_weights).
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 40, leaseSeconds: 60, groups, agingSeconds: 0 });
		expect(got).toHaveLength(40);
		expect(Math.abs(got.filter((t) => t.group === 'vip').length - 30)).toBeLessThanOrEqual(1);
		expect(Math.abs(got.filter((t) => t.group === 'bulk').length - 10)).toBeLessThanOrEqual(1);
		expect(got.filter((t) => t.group === 'other')).toHaveLength(0);
	});

	test('the order carries over between claims of one task each', async () => {
		const queue = db.queueName('single');
		await db.fill(queue, 'high', 50);
		await db.fill(queue, 'normal', 50);
		await db.fill(queue, 'low', 50);
		const order: string[] = [];
		for (let i = 0; i < 16; i++) {
			const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 0 });
			order.push(t.group[0]);
		}
		// Tags (docs/queue.md, "Scheduling"): high .2 .4 .6 ..., then normal and low from the queue's
		// virtual time .2: normal .7 1.2 ..., low 1.2 2.2 ...; ties by id (high, normal, low were
		// enqueued in that order).
		expect(order.join('')).toBe('hhhnhhhnlhhnhhhn');
		// 5:2:1 in every window of 8 (±1).
		for (let i = 0; i + 8 <= 16; i++) {
			const w = order.slice(i, i + 8);
			expect(Math.abs(w.filter((g) => g === 'h').length - 5)).toBeLessThanOrEqual(1);
			expect(Math.abs(w.filter((g) => g === 'n').length - 2)).toBeLessThanOrEqual(1);
			expect(Math.abs(w.filter((g) => g === 'l').length - 1)).toBeLessThanOrEqual(1);
		}
	});

	test('delayed tasks are not claimed before their time', async () => {
		const queue = db.queueName('delay');
		await db.fill(queue, 'high', 3, { delaySeconds: 3600 });
		await db.fill(queue, 'low', 2);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
		expect(got.map((t) => t.group)).toEqual(['low', 'low']);
	});
});
