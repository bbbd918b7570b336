/**
 * Operators see trouble before it bites: Stats reports per group the oldest pending age,
 * for the table its dead tuples and last (auto)vacuum, and for the database the open transaction
 * holding back the xmin horizon.
 */
import { complete, dequeue, stats } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

let db: QueueTestDb;

/** Statistics reach pg_stat_user_tables within about a second of each backend's last flush: poll (at most 10 s). */
async function statsUntil(queue: string, ok: (s: Awaited<ReturnType<typeof stats>>) => boolean) {
	return waitFor(
		async () => {
			const s = await stats(db.pool, db.ledgerSchema, queue);
			return ok(s) && s;
		},
		{ what: `the statistics of ${queue} to show the change`, timeoutMs: 10_000, intervalMs: 250 },
	);
}
beforeAll(async () => {
	db = await queueTestDb(4);
});
afterAll(async () => {
	await db.drop();
});

describe('stats: table and database health', () => {
	test('oldest pending age per group (ready and delayed), and over the queue', async () => {
		const queue = db.queueName('age');
		const [old] = await db.fill(queue, 'low', 1, { delaySeconds: 600 });
		await db.fill(queue, 'high', 2);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET enqueued_at = now() - interval '2 hours' WHERE id = $1`, [old]);
		const s = await stats(db.pool, db.ledgerSchema, queue);
		const low = s.groups.find((g) => g.group === 'low');
		const high = s.groups.find((g) => g.group === 'high');
		expect(low?.oldestPendingSeconds).toBeGreaterThanOrEqual(7200);
		expect(low?.oldestPendingSeconds).toBeLessThan(7300);
		expect(low?.oldestWaitSeconds).toBe(0); // delayed: not ready yet
		expect(high?.oldestPendingSeconds).toBeGreaterThanOrEqual(0);
		expect(high?.oldestPendingSeconds).toBeLessThan(60);
		expect(s.oldestPendingSeconds).toBe(low?.oldestPendingSeconds);
	});

	test('dead tuples, vacuum, and the long transaction holding back the xmin horizon', async () => {
		const queue = db.queueName('vac');
		await db.fill(queue, 'high', 300);
		const holder = await db.client();
		await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
		await holder.query(`SELECT count(*) FROM "${db.schema}".queue_tasks`);
		const { rows: pidRows } = await holder.query('SELECT pg_backend_pid() AS pid');
		// The holder's transaction must be a second old by the server's clock (pg_stat_activity's
		// xact_start, which no test clock moves): wait until the server says it is.
		await waitFor(
			async () => (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND now() - xact_start >= interval '1 second'`, [pidRows[0].pid])).rowCount! > 0,
			{ what: "the holder's transaction a second old (pg_stat_activity.xact_start)", timeoutMs: 10_000, intervalMs: 50 },
		);
		for (let i = 0; i < 3; i++) await complete(db.pool, db.ledgerSchema, await dequeue(db.pool, db.ledgerSchema, { queue, limit: 100 }));
		// The holder's xid age only grows: read it before Stats does.
		const { rows: mine } = await db.pool.query(`SELECT age(backend_xmin) AS a FROM pg_stat_activity WHERE pid = $1`, [pidRows[0].pid]);
		const during = await statsUntil(queue, (x) => (x.table.deadTuples ?? 0) >= 300);
		expect(typeof during.table.autovacuumOn).toBe('boolean');
		expect(during.table.deadTuples).toBeGreaterThanOrEqual(300);
		expect(during.table.oldestXmin).not.toBeNull();
		// Other sessions of the machine may hold an older horizon; ours must be at least this old.
		expect(during.table.oldestXmin?.transactionSeconds).toBeGreaterThanOrEqual(1);
		expect(during.table.oldestXmin?.ageXids).toBeGreaterThanOrEqual(Number(mine[0].a));
		// While the snapshot is held, VACUUM cannot remove those row versions.
		await db.pool.query(`VACUUM "${db.schema}".queue_tasks`);
		const held = await statsUntil(queue, (x) => x.table.lastVacuum !== null);
		expect(held.table.deadTuples).toBeGreaterThanOrEqual(300);
		expect(held.table.lastVacuum).not.toBeNull();
		await holder.query('COMMIT');
		await db.pool.query(`VACUUM "${db.schema}".queue_tasks`);
		const after = await statsUntil(queue, (x) => (x.table.vacuumCount ?? 0) >= 2);
		expect(after.table.deadTuples).toBeLessThan(held.table.deadTuples as number);
		expect(after.table.vacuumCount).toBeGreaterThanOrEqual(2);
		expect(after.table.preparedTransactions).toBeGreaterThanOrEqual(0);
	});
});
