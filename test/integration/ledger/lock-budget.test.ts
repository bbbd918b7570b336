/**
 * Lock waits have one bound per batch: the SQL functions share one budget of
 * about one Lock Timeout among all the row locks a batch waits for (ol_lock_deadline /
 * ol_lock_budget). Keys another transaction holds answer busy within about one Lock Timeout and
 * the rest of the batch is decided; queue settles fail within about one Lock Timeout.
 */
import { Client } from 'pg';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { LedgerBusyError } from '../../../src/db/bounds';
import { complete, dequeue, enqueue, fail } from '../../../src/queue';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(60_000);

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_lockb' });
});
afterAll(async () => {
	await db.drop();
});

const LOCK_MS = 1000;
const bounds = { statementTimeoutMs: 5000, lockTimeoutMs: LOCK_MS };
const item = (i: number, key: string) => prepareReserveItem(i, { operationKey: key, request: { key }, leaseSeconds: 60 });

/** Another session holding row locks (`sql` run in its open transaction) until release(), or until `afterMs`. */
async function hold(sql: string, params: unknown[], afterMs?: number) {
	const c = new Client({ connectionString: DATABASE_URL });
	await c.connect();
	await c.query('BEGIN');
	await c.query(sql, params);
	let done = false;
	const release = async () => {
		if (done) return;
		done = true;
		await c.query('ROLLBACK').catch(() => undefined);
		await c.end();
	};
	const timer = afterMs === undefined ? null : setTimeout(() => void release(), afterMs);
	return {
		release: async () => {
			if (timer) clearTimeout(timer);
			await release();
		},
	};
}
const lockRows = (keys: string[], afterMs?: number) => hold(`SELECT 1 FROM ${db.schemaSql}.operations WHERE operation_key = ANY ($1) FOR UPDATE`, [keys], afterMs);
const lockTask = (id: string, afterMs?: number) => hold(`SELECT 1 FROM ${db.schemaSql}.queue_tasks WHERE id = $1 FOR UPDATE`, [id], afterMs);

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
	const t0 = Date.now();
	const r = await fn();
	return [r, Date.now() - t0];
}

describe('the ledger: one lock budget per batch', () => {
	it('Confirm of one key another transaction holds answers busy after about one Lock Timeout (it took two)', async () => {
		const [a, b] = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'lb:c1'), item(1, 'lb:c2')]);
		const lock = await lockRows(['lb:c1']);
		try {
			const [res, ms] = await timed(() =>
				confirmOperations(
					db.pool,
					db.ledgerSchema,
					[
						prepareConfirmItem(0, { operationKey: 'lb:c1', leaseToken: a.leaseToken, outcome: 'succeeded', externalRef: 'r1' }),
						prepareConfirmItem(1, { operationKey: 'lb:c2', leaseToken: b.leaseToken, outcome: 'succeeded', externalRef: 'r2' }),
					],
					{},
					bounds,
				),
			);
			expect(res.map((r) => r.result)).toEqual(['busy', 'recorded']);
			expect(ms).toBeGreaterThanOrEqual(LOCK_MS * 0.9);
			expect(ms).toBeLessThan(LOCK_MS * 1.7);
		} finally {
			await lock.release();
		}
	});

	it('Reserve of 7 held keys and 1 free key: the 7 answer busy within about one Lock Timeout and the free key proceeds (it ran into the statement timeout)', async () => {
		const held = Array.from({ length: 7 }, (_, n) => `lb:r${n}`);
		await reserveOperations(db.pool, db.ledgerSchema, held.map((k, n) => item(n, k)));
		await db.pool.query(`UPDATE ${db.schemaSql}.operations SET lease_expires_at = now() - interval '1 second' WHERE operation_key = ANY ($1)`, [held]);
		const lock = await lockRows(held);
		try {
			const [res, ms] = await timed(() => reserveOperations(db.pool, db.ledgerSchema, [...held, 'lb:rfree'].map((k, n) => item(n, k)), {}, bounds));
			expect(res.map((r) => r.outcome)).toEqual([...held.map(() => 'busy'), 'proceed']);
			expect(ms).toBeLessThan(LOCK_MS * 1.7);
		} finally {
			await lock.release();
		}
		// Nothing was recorded for the busy keys (their leases ended: they become unknown only when decided).
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.operations WHERE operation_key = ANY ($1) AND status = 'reserved'`, [held]);
		expect(rows[0].n).toBe(7);
	});

	it("keys another transaction is inserting (an uncommitted Reserve of them) answer busy within about one Lock Timeout; the free key proceeds", async () => {
		const keys = ['lb:u1', 'lb:u2', 'lb:u3'];
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		await c.query('BEGIN');
		await reserveOperations(c, db.ledgerSchema, keys.map((k, n) => item(n, k)));
		try {
			const [res, ms] = await timed(() => reserveOperations(db.pool, db.ledgerSchema, [...keys, 'lb:ufree'].map((k, n) => item(n, k)), {}, bounds));
			expect(res.map((r) => r.outcome)).toEqual(['busy', 'busy', 'busy', 'proceed']);
			expect(ms).toBeLessThan(LOCK_MS * 1.7);
		} finally {
			await c.query('ROLLBACK');
			await c.end();
		}
	});

	it('waits do not add up: three keys held by three transactions that let go 0.7 Lock Timeouts apart', async () => {
		const keys = ['lb:s1', 'lb:s2', 'lb:s3'];
		await reserveOperations(db.pool, db.ledgerSchema, keys.map((k, n) => item(n, k)));
		// Each wait alone is shorter than the Lock Timeout: one bound per lock would wait for all three (2.1 s).
		const locks = await Promise.all(keys.map((k, n) => lockRows([k], 700 * (n + 1))));
		try {
			const [res, ms] = await timed(() => reserveOperations(db.pool, db.ledgerSchema, keys.map((k, n) => item(n, k)), {}, bounds));
			expect(res.map((r) => r.outcome)).toEqual(['in_progress', 'busy', 'busy']);
			expect(ms).toBeLessThan(LOCK_MS * 1.7);
		} finally {
			await Promise.all(locks.map((l) => l.release()));
		}
	});

	it('leaves the caller\'s lock_timeout as it was (inside the caller\'s own transaction)', async () => {
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		try {
			await c.query("BEGIN; SET LOCAL lock_timeout = '2500ms'");
			await reserveOperations(c, db.ledgerSchema, [item(0, 'lb:keep1'), item(1, 'lb:keep2')]);
			await reserveOperations(c, db.ledgerSchema, [item(0, 'lb:keep1'), item(1, 'lb:keep3')]);
			expect((await c.query('SHOW lock_timeout')).rows[0].lock_timeout).toBe('2500ms');
			await c.query('ROLLBACK');
		} finally {
			await c.end();
		}
	});
});

describe('the queue: one lock budget per settle call', () => {
	it('Fail of three tasks held by transactions that let go 0.7 Lock Timeouts apart fails within about one Lock Timeout, nothing recorded', async () => {
		const queue = 'lb-fail';
		await enqueue(db.pool, db.ledgerSchema, [1, 2, 3].map((n) => ({ queue, group: 'high', payload: { n } })));
		const tasks = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 3, leaseSeconds: 60 });
		expect(tasks).toHaveLength(3);
		const locks = await Promise.all(tasks.map((t, n) => lockTask(t.taskId, 700 * (n + 1))));
		try {
			const t0 = Date.now();
			const err = await fail(db.pool, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken, error: 'x' })), {}, bounds).catch((e: unknown) => e);
			const ms = Date.now() - t0;
			expect(err).toBeInstanceOf(LedgerBusyError);
			expect(ms).toBeLessThan(LOCK_MS * 1.7);
		} finally {
			await Promise.all(locks.map((l) => l.release()));
		}
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.queue_tasks WHERE queue = $1 AND status = 'processing'`, [queue]);
		expect(rows[0].n).toBe(3);
	});

	it('Complete of a batch completes the tasks nobody holds at once and waits for a held one within the budget', async () => {
		const queue = 'lb-complete';
		await enqueue(db.pool, db.ledgerSchema, [1, 2, 3].map((n) => ({ queue, group: 'high', payload: { n } })));
		const tasks = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 3, leaseSeconds: 60 });
		const lock = await lockTask(tasks[1].taskId);
		try {
			// The holder lets go once the Complete is seen waiting for its lock (not after a fixed time).
			const waited = waitFor(
				async () =>
					(await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%queue_complete%' AND datname = current_database()`)).rowCount! > 0,
				{ what: 'the Complete waiting for the held task', timeoutMs: LOCK_MS, intervalMs: 20 },
			).then(() => lock.release());
			const [res, ms] = await timed(() => complete(db.pool, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })), bounds));
			await waited;
			expect(res.map((r) => r.outcome)).toEqual(['completed', 'completed', 'completed']);
			expect(ms).toBeLessThan(LOCK_MS);
		} finally {
			await lock.release();
		}
	});
});
