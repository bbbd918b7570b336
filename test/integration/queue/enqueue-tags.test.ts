/**
 * Fairness tags written by enqueue (schema/functions/queue/queue_enqueue.sql): the one-statement
 * path (no dedupe keys) and the general path (dedupe keys) give the same tags; a group's tag row
 * held by another transaction is never waited for (its items stay untagged and the next claim tags
 * them); a group's first batch creates its tag row.
 */
import { dequeue, enqueue } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(4);
});
afterAll(async () => {
	await db.drop();
});

async function tags(queue: string): Promise<Array<[string, number | null]>> {
	const { rows } = await db.pool.query<{ priority_group: string; vtag: number | null }>(
		`SELECT priority_group, vtag FROM "${db.schema}".queue_tasks WHERE queue = $1 ORDER BY id`,
		[queue],
	);
	return rows.map((r) => [r.priority_group, r.vtag === null ? null : Number(r.vtag)]);
}

async function lastTags(queue: string): Promise<Record<string, number>> {
	const { rows } = await db.pool.query<{ priority_group: string; last_tag: number }>(
		`SELECT priority_group, last_tag FROM "${db.schema}".queue_group_tags WHERE queue = $1`,
		[queue],
	);
	return Object.fromEntries(rows.map((r) => [r.priority_group, Number(r.last_tag)]));
}

const GROUPS = ['high', 'normal', 'low'];

describe('enqueue tags', () => {
	test('the one-statement path and the general path tag alike; tag rows move on', async () => {
		const fast = db.queueName('tags-fast');
		const general = db.queueName('tags-general');
		for (let round = 0; round < 2; round++) {
			await enqueue(db.pool, db.ledgerSchema, Array.from({ length: 9 }, (_, i) => ({ queue: fast, group: GROUPS[i % 3], payload: { i } })));
			await enqueue(
				db.pool,
				db.ledgerSchema,
				Array.from({ length: 9 }, (_, i) => ({ queue: general, group: GROUPS[i % 3], payload: { i }, dedupeKey: `r${round}-${i}` })),
			);
		}
		const a = await tags(fast);
		expect(a).toEqual(await tags(general));
		// Default weights 5, 2, 1: high 0.2, 0.4, ...; normal 0.5, 1, ...; low 1, 2, ... from virtual time 0;
		// the second batch starts at max(virtual time = the smallest pending tag 0.2, the group's last tag).
		expect(a.filter(([g]) => g === 'high').map(([, t]) => t)).toEqual([0.2, 0.4, 0.6, 0.8, 1, 1.2]);
		expect(a.filter(([g]) => g === 'low').map(([, t]) => t)).toEqual([1, 2, 3, 4, 5, 6]);
		expect(await lastTags(fast)).toEqual({ high: 1.2, normal: 3, low: 6 });
		expect(await lastTags(general)).toEqual({ high: 1.2, normal: 3, low: 6 });
	});

	test('a tag row held by another transaction is not waited for: those items stay untagged, the next claim tags them', async () => {
		const queue = db.queueName('held');
		await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'high', payload: { first: true } },
			{ queue, group: 'low', payload: { first: true } },
		]);
		const holder = await db.client();
		await holder.query('BEGIN');
		try {
			await holder.query(`SELECT 1 FROM "${db.schema}".queue_group_tags WHERE queue = $1 AND priority_group = 'low' FOR UPDATE`, [queue]);
			const t0 = Date.now();
			const out = await enqueue(db.pool, db.ledgerSchema, [
				{ queue, group: 'high', payload: { i: 1 } },
				{ queue, group: 'low', payload: { i: 2 } },
				{ queue, group: 'newgroup', payload: { i: 3 } },
			]);
			expect(out.map((t) => t.status)).toEqual(['pending', 'pending', 'pending']);
			// Not blocked behind the holder (its lock is held until it ends, below).
			expect(Date.now() - t0).toBeLessThan(5000);
		} finally {
			await holder.query('ROLLBACK');
		}
		expect(await tags(queue)).toEqual([
			['high', 0.2],
			['low', 1],
			['high', 0.4],
			['low', null],
			['newgroup', 1.2], // its row created by this batch: max(virtual time 0.2, 0) + 1 / 1
		]);
		expect((await lastTags(queue)).newgroup).toBe(1.2);
		const claimed = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, groups: GROUPS.concat('newgroup').map((name) => ({ name, weight: 1 })) });
		expect(claimed).toHaveLength(5);
		expect((await tags(queue)).filter(([, t]) => t === null)).toEqual([]);
	});
});
