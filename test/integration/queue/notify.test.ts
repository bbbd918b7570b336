/**
 * Enqueue's notify option: 'commit' notifies at commit, 'after' notifies after the
 * commit in a second statement (the task is visible when the notification arrives), 'none' sends
 * nothing; a deduplicated enqueue never notifies under 'after'.
 */
import type { Notification } from 'pg';
import { dequeue, enqueue, queueChannel } from '../../../src/queue';
import { InputError } from '../../../src/errors';
import { drainNotifications, queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(4);
});
afterAll(async () => {
	await db.drop();
});

async function listen(queue: string) {
	const c = await db.client();
	const got: Notification[] = [];
	c.on('notification', (n) => got.push(n));
	await c.query(`LISTEN ${queueChannel(db.ledgerSchema, queue)}`);
	return got;
}

describe('enqueue notify option', () => {
	test('commit, after, none: what a listener receives, and the task is claimable when it does', async () => {
		for (const mode of ['commit', 'after'] as const) {
			const queue = db.queueName(mode);
			const got = await listen(queue);
			let claimed = -1;
			const seen = new Promise<void>((resolve) => {
				const check = setInterval(async () => {
					if (got.length > 0) {
						clearInterval(check);
						claimed = (await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10 })).length;
						resolve();
					}
				}, 2);
			});
			await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high' }, { queue, group: 'low', delaySeconds: 60 }], { notify: mode });
			await seen;
			expect(got.map((n) => n.payload)).toEqual([queue]);
			expect(claimed).toBe(1);
			// Only delayed work: payload '' (re-read the due time).
			await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', delaySeconds: 60 }], { notify: mode });
			await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
			expect(got.map((n) => n.payload)).toEqual([queue, '']);
		}
		const queue = db.queueName('none');
		const got = await listen(queue);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high' }], { notify: 'none' });
		await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
		expect(got).toHaveLength(0);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10 })).toHaveLength(1);
	});

	test("'after' sends nothing for a deduplicated enqueue; a bad mode is refused before any write", async () => {
		const queue = db.queueName('dedupe');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'k' }]);
		const got = await listen(queue);
		const [again] = await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', dedupeKey: 'k' }], { notify: 'after' });
		expect(again.deduplicated).toBe(true);
		await drainNotifications(db.pool, queueChannel(db.ledgerSchema, queue), got);
		expect(got).toHaveLength(0);
		await expect(enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high' }], { notify: 'later' as never })).rejects.toBeInstanceOf(InputError);
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows[0].n).toBe(1);
	});
});
