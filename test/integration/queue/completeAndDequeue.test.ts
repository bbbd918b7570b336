/**
 * Complete and claim next in one transaction (src/queue/completeAndDequeue.ts), against real
 * Postgres: both halves commit together (the same transaction id on the archived row and the newly
 * claimed one); an error the server answers rolls both back and each half is then sent alone, so a
 * failing claim never loses the completions and a failing complete never blocks the claim; a lost
 * connection is thrown as it is, with nothing sent again.
 */
import { complete, completeAndDequeue, dequeue, type ClaimedTask } from '../../../src/queue';
import { boundedQueries, LedgerBusyError } from '../../../src/db/bounds';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
afterAll(async () => {
	await db.drop();
});

const bounds = { statementTimeoutMs: 10_000, lockTimeoutMs: 300 };
const opts = (queue: string, limit = 1) => ({ queue, limit, leaseSeconds: 300, groups: [{ name: 'normal', weight: 1 }] });
const target = (t: ClaimedTask) => ({ taskId: t.taskId, leaseToken: t.leaseToken });

async function where(id: string): Promise<{ where: string; status: string; xmin: string }> {
	const live = await db.pool.query(`SELECT status, xmin::text AS xmin FROM "${db.schema}".queue_tasks WHERE id = $1`, [id]);
	if (live.rows[0]) return { where: 'queue', ...live.rows[0] };
	const done = await db.pool.query(`SELECT status, xmin::text AS xmin FROM "${db.schema}".queue_tasks_archive WHERE id = $1`, [id]);
	return { where: 'archive', ...done.rows[0] };
}

describe('completeAndDequeue', () => {
	test('completes the finished tasks and claims the next ones in one transaction', async () => {
		const queue = db.queueName('both');
		const ids = await db.fill(queue, 'normal', 5);
		const first = await dequeue(db.pool, db.ledgerSchema, opts(queue, 2), bounds);
		expect(first.map((t) => t.taskId)).toEqual(ids.slice(0, 2));
		const r = await completeAndDequeue(db.pool, db.ledgerSchema, first.map(target), opts(queue, 2), bounds);
		expect(r.completeError).toBeUndefined();
		expect(r.claimError).toBeUndefined();
		expect(r.completed.map((c) => c.outcome)).toEqual(['completed', 'completed']);
		expect(r.tasks.map((t) => t.taskId)).toEqual(ids.slice(2, 4));
		const done = await where(ids[0]);
		const claimed = await where(ids[2]);
		expect(done).toMatchObject({ where: 'archive', status: 'succeeded' });
		expect(claimed).toMatchObject({ where: 'queue', status: 'processing' });
		// One transaction wrote both rows.
		expect(claimed.xmin).toBe(done.xmin);
		expect((await where(ids[1])).xmin).toBe(done.xmin);
		// Sending the same completions again is safe: already settled, and the claim goes on.
		const again = await completeAndDequeue(db.pool, db.ledgerSchema, first.map(target), opts(queue, 5), bounds);
		expect(again.completed.map((c) => c.outcome)).toEqual(['already_settled', 'already_settled']);
		expect(again.tasks.map((t) => t.taskId)).toEqual([ids[4]]);
		// No completions: a plain claim.
		const none = await completeAndDequeue(db.pool, db.ledgerSchema, [], opts(queue), bounds);
		expect(none).toEqual({ completed: [], tasks: [] });
	});

	test('a claim the server refuses (its lock wait timed out) rolls both back; the completions are then recorded alone and the error returned', async () => {
		const queue = db.queueName('claim-fails');
		const ids = await db.fill(queue, 'normal', 2);
		const [t] = await dequeue(db.pool, db.ledgerSchema, opts(queue), bounds);
		// A pause in progress holds the queue's pause lock exclusively: the claim waits for it (shared)
		// until the Lock Timeout fires.
		const holder = await db.client();
		await holder.query('BEGIN');
		await holder.query(`SELECT pg_advisory_xact_lock("${db.schema}".queue_pause_lock($1))`, [queue]);
		try {
			const r = await completeAndDequeue(db.pool, db.ledgerSchema, [target(t)], opts(queue), bounds);
			expect(r.completeError).toBeUndefined();
			expect(r.completed.map((c) => c.outcome)).toEqual(['completed']);
			expect(r.tasks).toEqual([]);
			expect(r.claimError).toBeInstanceOf(LedgerBusyError);
			expect(r.claimError?.message).toMatch(/lock timeout \(300 ms\)/);
		} finally {
			await holder.query('ROLLBACK');
		}
		expect(await where(ids[0])).toMatchObject({ where: 'archive', status: 'succeeded' });
		expect(await where(ids[1])).toMatchObject({ where: 'queue', status: 'pending' });
	});

	test('a complete the server refuses (a row lock held elsewhere) rolls both back; the claim is then sent alone and the complete\'s error returned', async () => {
		const queue = db.queueName('complete-fails');
		const ids = await db.fill(queue, 'normal', 2);
		const [t] = await dequeue(db.pool, db.ledgerSchema, opts(queue), bounds);
		const holder = await db.client();
		await holder.query('BEGIN');
		await holder.query(`SELECT id FROM "${db.schema}".queue_tasks WHERE id = $1 FOR UPDATE`, [t.taskId]);
		let r;
		try {
			r = await completeAndDequeue(db.pool, db.ledgerSchema, [target(t)], opts(queue), bounds);
		} finally {
			await holder.query('ROLLBACK');
		}
		expect(r.completeError).toBeInstanceOf(LedgerBusyError);
		expect(r.completed).toEqual([]);
		expect(r.claimError).toBeUndefined();
		expect(r.tasks.map((x) => x.taskId)).toEqual([ids[1]]);
		// The first task keeps its lease; its holder can still complete it.
		expect(await where(ids[0])).toMatchObject({ where: 'queue', status: 'processing' });
		expect((await complete(db.pool, db.ledgerSchema, [target(t)], bounds))[0].outcome).toBe('completed');
	});

	test('a connection lost during the call is thrown as it is: nothing is sent again, nothing was recorded', async () => {
		const queue = db.queueName('lost');
		const ids = await db.fill(queue, 'normal', 2);
		const [t] = await dequeue(db.pool, db.ledgerSchema, opts(queue), bounds);
		const holder = await db.client();
		await holder.query('BEGIN');
		await holder.query(`SELECT pg_advisory_xact_lock("${db.schema}".queue_pause_lock($1))`, [queue]);
		const call = completeAndDequeue(db.pool, db.ledgerSchema, [target(t)], opts(queue), { statementTimeoutMs: 10_000, lockTimeoutMs: 8_000 });
		const settled = call.then(
			() => undefined,
			(e: unknown) => e,
		);
		try {
			// The call's backend, waiting for the pause lock with the complete done, is terminated.
			let pid: number | undefined;
			await waitFor(
				async () => {
					const { rows } = await db.pool.query(
						`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%queue_complete%queue_claim%'`,
					);
					pid = rows[0]?.pid;
					return pid !== undefined;
				},
				{ what: 'the call waiting for the pause lock' },
			);
			await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
			const e = (await settled) as { code?: string } | undefined;
			expect(e).toBeDefined();
			expect(e?.code).toBe('57P01');
		} finally {
			await holder.query('ROLLBACK');
		}
		// Not sent again alone: the complete was rolled back with the transaction.
		expect(await where(ids[0])).toMatchObject({ where: 'queue', status: 'processing' });
		expect(await where(ids[1])).toMatchObject({ where: 'queue', status: 'pending' });
	});

	test('boundedQueries with a value that has no text form (a Buffer) runs the statements one by one, still in one transaction', async () => {
		const [a, b] = await boundedQueries<{ x: string; len?: number }>(
			db.pool,
			[
				{ text: 'SELECT txid_current()::text AS x, length($1::bytea) AS len', values: [Buffer.from([0, 1, 2])] },
				{ text: 'SELECT txid_current()::text AS x', values: [] },
			],
			bounds,
		);
		expect(a[0].len).toBe(3);
		expect(b[0].x).toBe(a[0].x);
	});
});
