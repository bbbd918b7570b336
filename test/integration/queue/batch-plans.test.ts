/**
 * A big complete finds and deletes its tasks by primary key whatever the table's statistics say.
 * Processing tasks are transient: statistics taken when none were processing, then a worker that
 * has just claimed 1,000 and completes them. The executed plan is read from auto_explain (the test
 * role is superuser on the local server): no scan may run once per task over many rows, and no
 * join may compare every task with every other.
 */
import { Client, Pool } from 'pg';
import { complete, dequeue, enqueue } from '../../../src/queue';
import { DATABASE_URL, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { scanRows, watchExecutedPlans } from '../../helpers/plans';

jest.setTimeout(120_000);

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(2);
});
afterAll(async () => {
	await db.drop();
});

describe('queue_complete under stale statistics', () => {
	it('completes a 1,000-task batch by primary-key lookups, with no per-task rescans or join filter over all rows', async () => {
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		try {
			const queue = db.queueName('plans');
			const groups = [{ name: 'g', weight: 1 }];
			const batch = (p: string, q = queue, serial = false) =>
				Array.from({ length: 1000 }, (_, i) => ({ queue: q, group: 'g', payload: { p, i }, ...(serial ? { serialKey: `${p}-${i}` } : {}) }));
			const claimAndComplete = async () => {
				const tasks = await dequeue(c, db.ledgerSchema, { queue, limit: 1000, leaseSeconds: 600, groups });
				expect(tasks).toHaveLength(1000);
				return complete(c, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
			};
			// History: 3,000 tasks done; 1,000 pending and none processing when statistics are taken.
			for (let b = 0; b < 3; b++) {
				await enqueue(c, db.ledgerSchema, batch(`old${b}`));
				await claimAndComplete();
			}
			// Statistics taken when no task had a serial key; then 2,000 waiting serial tasks of
			// another queue, and the batch itself serial.
			await enqueue(c, db.ledgerSchema, batch('new'));
			await c.query(`ANALYZE ${db.schema}.queue_tasks`);
			const other = db.queueName('other');
			await enqueue(c, db.ledgerSchema, batch('o1', other, true));
			await enqueue(c, db.ledgerSchema, batch('o2', other, true));
			const done = await claimAndComplete();
			expect(done.every((r) => r.outcome === 'completed')).toBe(true);
			await enqueue(c, db.ledgerSchema, batch('serial', queue, true));

			const logs = await watchExecutedPlans(c);
			const tasks = await dequeue(c, db.ledgerSchema, { queue, limit: 1000, leaseSeconds: 600, groups });
			expect(tasks).toHaveLength(1000);
			logs.length = 0;
			const results = await complete(c, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
			expect(results).toHaveLength(1000);
			expect(results.every((r) => r.outcome === 'completed')).toBe(true);

			// The statement that locks and deletes the batch.
			const del = logs.filter((m) => /DELETE FROM queue_tasks x/.test(m));
			expect(del).toHaveLength(1);
			// The serial-key locks of the batch's tasks, taken before the delete.
			const hold = logs.filter((m) => /Query Text: SELECT count\(\*\)\s+FROM \(SELECT pg_advisory_xact_lock/.test(m));
			expect(hold).toHaveLength(1);
			for (const s of scanRows(hold[0]).filter((x) => / on queue_tasks /.test(x.line))) {
				expect(s.line).toMatch(/queue_tasks_pkey/);
				expect(s.total).toBeLessThanOrEqual(1000);
			}
			const plan = del[0];
			const removed = [...plan.matchAll(/Rows Removed by Join Filter: (\d+)/g)].map((m) => Number(m[1]));
			expect(removed.reduce((a, b) => a + b, 0)).toBeLessThan(1000);
			const scans = scanRows(plan).filter((s) => / on queue_tasks /.test(s.line));
			expect(scans.length).toBeGreaterThanOrEqual(2);
			for (const s of scans) {
				expect(s.line).toMatch(/queue_tasks_pkey/);
				expect(s.total).toBeLessThanOrEqual(1000);
			}
		} finally {
			await c.end();
		}
	});
});

describe('queue_tag_due with plans made on a small table', () => {
	it('tags due untagged tasks by primary key, not by reading every untagged task, once a backlog has built up', async () => {
		// PL/pgSQL keeps each statement's plan for the connection. Made while the table held a few
		// tasks, the tagging UPDATE hashed the claimed ids against queue_tasks_untagged_group_idx,
		// that is every untagged task of every queue, once per group per claim.
		const fresh = await queueTestDb(2);
		await fresh.pool.query(`ALTER TABLE "${fresh.schema}".queue_tasks SET (autovacuum_enabled = false)`);
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		const other = new Client({ connectionString: DATABASE_URL });
		await other.connect();
		try {
			const queue = fresh.queueName('tag');
			const groups = [
				{ name: 'a', weight: 1 },
				{ name: 'b', weight: 2 },
			];
			// A client inside its own transaction enqueues untagged tasks ("t": false); the claim
			// tags them (the full path). Small rounds first: the plans are made on a small table.
			for (let r = 0; r < 8; r++) {
				await enqueue(c, fresh.ledgerSchema, Array.from({ length: 4 }, (_, i) => ({ queue, group: i % 2 ? 'a' : 'b', payload: { r, i } })));
				const tasks = await dequeue(c, fresh.ledgerSchema, { queue, limit: 4, leaseSeconds: 60, groups });
				expect(tasks).toHaveLength(4);
				await complete(c, fresh.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
			}
			// A backlog of 20,000 untagged tasks in another queue, and 1,000 in this one.
			for (let b = 0; b < 20; b++) {
				await enqueue(other, fresh.ledgerSchema, Array.from({ length: 1000 }, (_, i) => ({ queue: `${queue}-other`, group: 'a', payload: { b, i } })));
			}
			await enqueue(other, fresh.ledgerSchema, Array.from({ length: 1000 }, (_, i) => ({ queue, group: i % 2 ? 'a' : 'b', payload: { i } })));
			const logs = await watchExecutedPlans(c);
			const tasks = await dequeue(c, fresh.ledgerSchema, { queue, limit: 100, leaseSeconds: 60, groups });
			expect(tasks).toHaveLength(100);
			const updates = logs.filter((m) => /Query Text: UPDATE queue_tasks t SET vtag/.test(m));
			expect(updates.length).toBeGreaterThanOrEqual(1);
			for (const plan of updates) {
				const scans = scanRows(plan).filter((x) => / on queue_tasks /.test(x.line));
				expect(scans.length).toBeGreaterThanOrEqual(1);
				for (const x of scans) {
					expect(x.line).toMatch(/queue_tasks_pkey/);
					// At most the group's share of the tagging cap (10,000 ids / 2 groups); here 500.
					expect(x.total).toBeLessThanOrEqual(1000);
				}
			}
		} finally {
			await c.end();
			await other.end();
			await fresh.drop();
		}
	});
});

describe('queue_enqueue of keyed items with plans made on a small table', () => {
	it('finds each key\'s live task through the dedupe index, not by reading every task, once the table has grown', async () => {
		// Made while the table held a few tasks, the keyed path's statements (the stale-task sweep,
		// the answer lookup, the serial steps) joined the batch against whole scans of queue_tasks.
		const fresh = await queueTestDb(2);
		await fresh.pool.query(`ALTER TABLE "${fresh.schema}".queue_tasks SET (autovacuum_enabled = false)`);
		// One connection, so the plans the small rounds make are the ones the big call runs; a pool,
		// so the enqueue runs in its own transaction and tags its ready tasks.
		const c = new Pool({ connectionString: DATABASE_URL, max: 1 });
		const other = new Client({ connectionString: DATABASE_URL });
		await other.connect();
		try {
			const queue = fresh.queueName('keyed');
			const keyed = (tag: string, n: number, q = queue, serial = false) =>
				Array.from({ length: n }, (_, i) => ({
					queue: q,
					group: 'g',
					payload: { tag, i },
					dedupeKey: `${tag}-${i}`,
					...(serial ? { serialKey: `s-${tag}-${i % 7}` } : {}),
				}));
			// Small rounds first, repeats included: the plans are made on a small table.
			for (let r = 0; r < 8; r++) {
				await enqueue(c, fresh.ledgerSchema, keyed(`small${r % 3}`, 4, queue, r % 2 === 1));
			}
			// 25,000 live keyed tasks in another queue and 2,000 in this one, some serial.
			for (let b = 0; b < 25; b++) await enqueue(other, fresh.ledgerSchema, keyed(`o${b}`, 1000, `${queue}-other`, b % 5 === 0));
			await enqueue(other, fresh.ledgerSchema, keyed('mine', 2000, queue, true));
			const conn = await c.connect();
			const logs = await watchExecutedPlans(conn as unknown as Client);
			conn.release();
			// 100 keys: half of them already live (duplicates), half new, of those half serial.
			const items = [...keyed('mine', 50), ...keyed('new', 25, queue, true), ...keyed('plain', 25)];
			const res = await enqueue(c, fresh.ledgerSchema, items);
			expect(res.filter((r) => r.outcome === 'duplicate')).toHaveLength(50);
			expect(res.filter((r) => r.outcome === 'enqueued')).toHaveLength(50);
			// Every scan of the table or one of its indexes, in every statement the call ran.
			const scans = logs.flatMap((plan) => scanRows(plan).filter((x) => / on queue_tasks/.test(x.line)).map((x) => ({ ...x, plan })));
			expect(scans.length).toBeGreaterThanOrEqual(4);
			// About one row per item and statement (100 items); a scan of the table reads thousands.
			const wide = scans.filter((x) => x.read > 400);
			if (wide.length > 0) throw new Error(wide.map((x) => `${x.line} read ${x.read} rows in\n${x.plan}`).join('\n\n'));
		} finally {
			await c.end();
			await other.end();
			await fresh.drop();
		}
	});
});

describe('queue_enqueue leaves the caller\'s planner settings as it found them', () => {
	it('a keyed enqueue inside the caller\'s transaction puts enable_seqscan and jit back', async () => {
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		try {
			const queue = db.queueName('settings');
			await c.query('BEGIN');
			await c.query("SET LOCAL enable_seqscan = on; SET LOCAL jit = on");
			const out = await enqueue(c, db.ledgerSchema, [{ queue, group: 'g', payload: {}, dedupeKey: 'k1', serialKey: 's1' }]);
			expect(out[0].outcome).toBe('enqueued');
			const { rows } = await c.query("SELECT current_setting('enable_seqscan') AS s, current_setting('jit') AS j");
			expect(rows[0]).toEqual({ s: 'on', j: 'on' });
			await c.query('ROLLBACK');
		} finally {
			await c.end();
		}
	});
});

describe('a serial key\'s next task is found without reading its backlog', () => {
	it('completing the head of a key with 3,000 tasks waiting behind it reads a handful of index entries', async () => {
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		try {
			const queue = db.queueName('serial-backlog');
			const groups = [{ name: 'g', weight: 1 }];
			for (let b = 0; b < 3; b++) {
				await enqueue(db.pool, db.ledgerSchema, Array.from({ length: 1000 }, (_, i) => ({ queue, group: 'g', payload: { b, i }, serialKey: 'one' })));
			}
			const [head] = await dequeue(c, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, groups });
			const logs = await watchExecutedPlans(c);
			const done = await complete(c, db.ledgerSchema, [{ taskId: head.taskId, leaseToken: head.leaseToken }]);
			expect(done[0].outcome).toBe('completed');
			// The promotion (queue_serial_promote): the next task of the key is claimable now.
			const promote = logs.filter((m) => /Query Text: WITH k AS \(/.test(m));
			expect(promote).toHaveLength(1);
			const scans = scanRows(promote[0]).filter((x) => / on queue_tasks/.test(x.line));
			expect(scans.length).toBeGreaterThanOrEqual(2);
			// Through queue_tasks_serial_idx alone, "is another task of the key not waiting?" read all
			// 2,999 waiting tasks of the key.
			for (const x of scans) expect(x.read).toBeLessThanOrEqual(5);
			const [next] = await dequeue(c, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, groups });
			expect(next?.payload).toEqual({ b: 0, i: 1 });
		} finally {
			await c.end();
		}
	});
});
