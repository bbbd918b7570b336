/**
 * Every queue operation reads about its own batch's rows, whatever plans its connection made while
 * the tables were small. PL/pgSQL keeps each statement's plan for the connection until the table is
 * analysed again, and a plan made on a small table can read the whole table once per call, or once
 * per item. Two ways a plan is made small, both common in production:
 *   - never analysed: the planner assumes ten pages, so joins hash whole scans and semi joins run
 *     the table as their outer side;
 *   - analysed while small (autovacuum's ANALYZE of a quiet queue): a sequential scan of a page
 *     costs less than one index probe, so even a primary-key lookup becomes a scan of the table.
 * Each operation runs first on tiny batches on one connection (the plans are made), then another
 * connection grows the table to 25,000 tasks in every state (autovacuum off: no ANALYZE replaces
 * the plans), then the first connection runs the operation on 100 items and the executed plans of
 * every statement it ran are read (auto_explain): no scan of a queue table may read more than 400
 * rows. Seen before the fix, e.g.: Fail of 100 tasks 100 scans of 25,000 rows each; Complete's
 * serial-key hold 2.5 million rows; Cancel's lookup, Requeue Dead's lock and read, Purge's pick of
 * one queue's dead tasks (every dead task of every queue), the enqueue of serial tasks (48,000 ids
 * per task).
 * Not covered, by design: Stats and the queue health's per-group counts read every task of the
 * table (no index has the queue first for every status), and a purge of the archive reads every
 * archive row older than the cutoff of every queue (docs/queue.md, "Scale").
 */
import type { Client, Pool } from 'pg';
import {
	cancel,
	complete,
	dequeue,
	enqueue,
	extendLease,
	fail,
	purge,
	release,
	requeueDead,
	requeueDeadByIds,
	settleById,
	type ClaimedTask,
	type EnqueueInput,
} from '../../../src/queue';
import { DATABASE_URL, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { oneConnection, watchExecutedPlans, wideScans } from '../../helpers/plans';

jest.setTimeout(180_000);

type Db = Pool;
const G = [{ name: 'g', weight: 1 }];
const tasks = (queue: string, n: number, tag: string, extra: (i: number) => Partial<EnqueueInput> = () => ({})): EnqueueInput[] =>
	Array.from({ length: n }, (_, i) => ({ queue, group: 'g', payload: { tag, i }, ...extra(i) }));
const claim = (db: Db, s: QueueTestDb, queue: string, n: number) => dequeue(db, s.ledgerSchema, { queue, limit: n, leaseSeconds: 600, groups: G });
const held = (ts: ClaimedTask[]) => ts.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken }));

/**
 * Each operation as (db: the connection whose plans are read, maker: the connection that prepares
 * its tasks, n: batch size, q: a queue of its own). Only `db`'s calls are the operation's.
 */
const OPERATIONS: Record<string, (s: QueueTestDb, db: Db, maker: Db, n: number, q: string) => Promise<unknown>> = {
	claim: async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'claim'));
		await complete(maker, s.ledgerSchema, held(await claim(db, s, q, n)));
	},
	complete: async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'complete'));
		await complete(db, s.ledgerSchema, held(await claim(maker, s, q, n)));
	},
	'fail to retry': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'retry'));
		await fail(db, s.ledgerSchema, held(await claim(maker, s, q, n)).map((t) => ({ ...t, error: 'e' })));
	},
	'fail to dead': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'dead'));
		await fail(db, s.ledgerSchema, held(await claim(maker, s, q, n)).map((t) => ({ ...t, error: 'e', giveUp: true })));
	},
	release: async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'release'));
		await release(db, s.ledgerSchema, held(await claim(maker, s, q, n)));
	},
	'extend lease': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'extend'));
		const ts = held(await claim(maker, s, q, n));
		await extendLease(db, s.ledgerSchema, ts);
		await complete(maker, s.ledgerSchema, ts);
	},
	'cancel pending by id': async (s, db, maker, n, q) => {
		const es = await enqueue(maker, s.ledgerSchema, tasks(q, n, 'cancel'));
		await cancel(db, s.ledgerSchema, es.map((e) => ({ queue: q, taskId: e.taskId })));
	},
	'cancel by dedupe key': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'cancel-key', (i) => ({ dedupeKey: `${q}-${i}` })));
		await cancel(db, s.ledgerSchema, Array.from({ length: n }, (_, i) => ({ queue: q, dedupeKey: `${q}-${i}` })));
	},
	'cancel processing': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'cancel-held'));
		const ts = await claim(maker, s, q, n);
		await cancel(db, s.ledgerSchema, ts.map((t) => ({ queue: q, taskId: t.taskId })));
		await complete(maker, s.ledgerSchema, held(ts));
	},
	'settle by id: complete': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'settle'));
		const ts = await claim(maker, s, q, n);
		await settleById(db, s.ledgerSchema, ts.map((t) => ({ queue: q, taskId: t.taskId, action: 'complete' as const, reason: 'r', by: 'op' })));
	},
	'settle by id: fail a pending task': async (s, db, maker, n, q) => {
		const es = await enqueue(maker, s.ledgerSchema, tasks(q, n, 'settle-fail'));
		await settleById(db, s.ledgerSchema, es.map((t) => ({ queue: q, taskId: t.taskId, action: 'fail' as const, reason: 'r', by: 'op' })));
	},
	'requeue dead by id': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'requeue'));
		const ts = await claim(maker, s, q, n);
		await fail(maker, s.ledgerSchema, held(ts).map((t) => ({ ...t, error: 'e', giveUp: true })));
		await requeueDeadByIds(db, s.ledgerSchema, ts.map((t) => ({ queue: q, taskId: t.taskId })));
	},
	'requeue dead of a queue': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'requeue-q'));
		await fail(maker, s.ledgerSchema, held(await claim(maker, s, q, n)).map((t) => ({ ...t, error: 'e', giveUp: true })));
		await requeueDead(db, s.ledgerSchema, { queue: q, limit: n });
	},
	'purge dead tasks of a queue': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n, 'purge'));
		await fail(maker, s.ledgerSchema, held(await claim(maker, s, q, n)).map((t) => ({ ...t, error: 'e', giveUp: true })));
		await purge(db, s.ledgerSchema, { queue: q, deadAfterSeconds: 0, limit: n });
	},
	'enqueue with serial keys': async (s, db, maker, n, q) => {
		await enqueue(db, s.ledgerSchema, tasks(q, n, 'serial', (i) => ({ serialKey: `s${i % 5}` })));
		await complete(db, s.ledgerSchema, held(await claim(maker, s, q, n)));
	},
	'enqueue with dedupe keys': async (s, db, maker, n, q) => {
		await enqueue(maker, s.ledgerSchema, tasks(q, n / 2, 'keyed', (i) => ({ dedupeKey: `${q}-${i}` })));
		await enqueue(db, s.ledgerSchema, tasks(q, n, 'keyed', (i) => ({ dedupeKey: `${q}-${i}` })));
	},
};

describe.each([
	['never analysed', false],
	['analysed while small', true],
])('queue operations with plans made on small tables (%s)', (_mode, analyseSmall) => {
	let s: QueueTestDb;
	let db: Pool;
	let maker: Pool;
	let logs: string[];
	let pid: number;
	let seq = 0;
	const q = () => `sp${++seq}`;
	let backend: () => Promise<number>;
	beforeAll(async () => {
		s = await queueTestDb(2);
		for (const t of ['queue_tasks', 'queue_tasks_archive']) await s.pool.query(`ALTER TABLE "${s.schema}".${t} SET (autovacuum_enabled = false)`);
		// One connection each: the plans the small rounds make on `db` are the ones the big calls run.
		// Never closed while idle (pg's default closes it after 10 s, and the big calls would then run
		// on fresh plans); each case checks that the connection is still the one that made the plans.
		({ pool: db, pid: backend } = await oneConnection(DATABASE_URL));
		({ pool: maker } = await oneConnection(DATABASE_URL));
		pid = await backend();
		const small = async () => {
			for (const op of Object.values(OPERATIONS)) await op(s, db, db, 2, q());
		};
		for (let r = 0; r < 3; r++) await small();
		if (analyseSmall) for (const t of ['queue_tasks', 'queue_tasks_archive']) await s.pool.query(`ANALYZE "${s.schema}".${t}`);
		// Five more rounds: PL/pgSQL switches a statement to its generic plan after five custom ones.
		for (let r = 0; r < 5; r++) await small();
		// 25,000 tasks of another queue in every state: pending (some keyed, some serial), processing,
		// retrying, dead, cancel requested.
		for (let b = 0; b < 25; b++) {
			await enqueue(maker, s.ledgerSchema, tasks('big', 1000, `b${b}`, (i) => (b % 4 === 0 ? { dedupeKey: `big${b}-${i}` } : b % 4 === 1 ? { serialKey: `bs${i % 50}` } : {})));
		}
		const big = await claim(maker, s, 'big', 8000);
		await fail(maker, s.ledgerSchema, held(big.slice(0, 3000)).map((t) => ({ ...t, error: 'e', giveUp: true })));
		await fail(maker, s.ledgerSchema, held(big.slice(3000, 5000)).map((t) => ({ ...t, error: 'e' })));
		await cancel(maker, s.ledgerSchema, big.slice(5000, 5500).map((t) => ({ queue: 'big', taskId: t.taskId })));
		const c = await db.connect();
		logs = await watchExecutedPlans(c as unknown as Client);
		c.release();
	});
	afterAll(async () => {
		await db.end();
		await maker.end();
		await s.drop();
	});

	it.each(Object.keys(OPERATIONS))('%s of 100 items reads about its own rows', async (name) => {
		// The grown table really is big for this connection's plans (autovacuum never analysed it).
		const { rows } = await maker.query<{ n: string }>(`SELECT count(*) AS n FROM "${s.schema}".queue_tasks`);
		expect(Number(rows[0].n)).toBeGreaterThan(20_000);
		expect(await backend()).toBe(pid);
		logs.length = 0;
		await OPERATIONS[name](s, db, maker, 100, q());
		const { scans, wide } = wideScans(logs, / on queue_tasks/, 400);
		// Not vacuous: the operation's statements were seen.
		expect(scans).toBeGreaterThan(0);
		expect(wide).toEqual([]);
	});
});
