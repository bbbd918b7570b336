/**
 * Attempts: no claim ever hands out a task beyond its max attempts, however it got there;
 * such a task goes dead exactly once, with the reason attempts_exhausted.
 */
import { dequeue, listDead, release } from '../../../src/queue';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
	// Test-only audit: every transition into dead, one row each.
	await db.pool.query(`
		CREATE TABLE "${db.schema}".dead_log (id bigint, reason text, at timestamptz DEFAULT clock_timestamp());
		CREATE FUNCTION "${db.schema}".log_dead() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status = 'dead' AND OLD.status <> 'dead' THEN
				INSERT INTO "${db.schema}".dead_log (id, reason) VALUES (NEW.id, NEW.dead_reason);
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER log_dead AFTER UPDATE ON "${db.schema}".queue_tasks FOR EACH ROW EXECUTE FUNCTION "${db.schema}".log_dead();`);
});
afterAll(async () => {
	await db.drop();
});

describe('attempts', () => {
	test('a pending task with attempts = max attempts is never handed out: dead once, attempts_exhausted', async () => {
		const queue = db.queueName('exhausted');
		const ids = await db.fill(queue, 'high', 6, { maxAttempts: 3 });
		// A crash between steps left ids[1] pending with its 3 attempts used; ids[3] over the limit.
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = 3, last_error = 'worker crashed' WHERE id = $1`, [ids[1]]);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = 3, max_attempts = 2 WHERE id = $1`, [ids[3]]);
		const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 60, agingSeconds: 0 });
		expect(got.map((t) => t.taskId)).toEqual([ids[0], ids[2], ids[4], ids[5]]);
		expect(got.every((t) => t.attempt <= t.maxAttempts)).toBe(true);
		const { rows } = await db.pool.query(
			`SELECT id::text, status, dead_reason, last_error FROM "${db.schema}".queue_tasks WHERE id = ANY($1::bigint[]) ORDER BY id`,
			[[ids[1], ids[3]]],
		);
		expect(rows).toEqual([
			{ id: ids[1], status: 'dead', dead_reason: 'attempts_exhausted', last_error: 'attempts exhausted before a claim (3 of 3 used); last error: worker crashed' },
			{ id: ids[3], status: 'dead', dead_reason: 'attempts_exhausted', last_error: 'attempts exhausted before a claim (3 of 2 used)' },
		]);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5 })).toHaveLength(0);
		const dead = await listDead(db.pool, db.ledgerSchema, queue, 10);
		expect(dead.map((d) => d.deadReason).sort()).toEqual(['attempts_exhausted', 'attempts_exhausted']);
		const { rows: log } = await db.pool.query(`SELECT id::text FROM "${db.schema}".dead_log WHERE id = ANY($1::bigint[])`, [ids]);
		expect(log.map((r) => r.id).sort()).toEqual([ids[1], ids[3]].sort());
	});

	test('released with its last attempt counted: the next claim sends it dead instead of handing out attempt max + 1', async () => {
		const queue = db.queueName('release-count');
		const [id] = await db.fill(queue, 'normal', 1, { maxAttempts: 1 });
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		expect((await release(db.pool, db.ledgerSchema, [{ ...t, countAttempt: true }]))[0]).toMatchObject({ outcome: 'released', attempts: 1 });
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5 })).toHaveLength(0);
		const { rows } = await db.pool.query(`SELECT status, dead_reason, lease_end FROM "${db.schema}".queue_tasks WHERE id = $1`, [id]);
		expect(rows[0]).toEqual({ status: 'dead', dead_reason: 'attempts_exhausted', lease_end: 'released' });
	});

	test('200 exhausted tasks among 800, 8 concurrent claimers: never handed out, each dead exactly once', async () => {
		const queue = db.queueName('race');
		const ids = await db.fill(queue, 'high', 800, { maxAttempts: 2 });
		const exhausted = ids.filter((_, i) => i % 4 === 1);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = 2 WHERE id = ANY($1::bigint[])`, [exhausted]);
		const handed: string[] = [];
		await Promise.all(
			Array.from({ length: 8 }, async () => {
				for (;;) {
					const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1 + Math.floor(Math.random() * 20), leaseSeconds: 600 });
					if (got.length === 0) {
						const { rows } = await db.pool.query(
							`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 AND status = 'pending'`,
							[queue],
						);
						if (rows[0].n === 0) return;
						continue;
					}
					for (const t of got) {
						expect(t.attempt).toBeLessThanOrEqual(t.maxAttempts);
						handed.push(t.taskId);
					}
				}
			}),
		);
		expect(handed.length).toBe(600);
		expect(new Set(handed).size).toBe(600);
		const ex = new Set(exhausted);
		expect(handed.some((id) => ex.has(id))).toBe(false);
		const { rows: log } = await db.pool.query(
			`SELECT id::text, count(*)::int AS n FROM "${db.schema}".dead_log WHERE id = ANY($1::bigint[]) GROUP BY id`,
			[ids],
		);
		expect(log).toHaveLength(200);
		expect(log.every((r) => r.n === 1 && ex.has(r.id))).toBe(true);
	});
});
