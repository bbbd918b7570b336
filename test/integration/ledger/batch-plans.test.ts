/**
 * A big Confirm looks each item's row up by primary key whatever the table's statistics say.
 * Reserved rows are transient: statistics taken when few rows were reserved, then a batch that
 * has just reserved 1,000 and confirms them, is the production pattern. The executed plan of the
 * batch's phase 1 is read from auto_explain (the test role is superuser on the local server), and
 * no plan node may join the items to the reserved rows by comparing every pair.
 */
import { Client } from 'pg';
import { DATABASE_URL, setLedgerClock, testDatabase } from '../../helpers/db';
import { scanRows, watchExecutedPlans } from '../../helpers/plans';

jest.setTimeout(120_000);

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_bplan' });
});
afterAll(async () => {
	await db.drop();
});

const FP = 'a'.repeat(64);
const reserveItems = (prefix: string, n: number) =>
	Array.from({ length: n }, (_, i) => ({ i, k: `${prefix}:${String(i).padStart(6, '0')}`, f: FP, a: 'sha256', t: null, r: { i }, l: 600 }));

type Reserved = { idx: number; outcome: string; lease_token: string };

/** reserve_operations of `items` on `c`, in schema `schemaSql` (the file's schema unless given). */
async function reserve(c: Client, items: ReturnType<typeof reserveItems>, schemaSql = db.schemaSql) {
	const { rows } = await c.query(
		`SELECT idx, outcome, lease_token FROM ${schemaSql}.reserve_operations($1::jsonb, '{}'::jsonb) ORDER BY idx`,
		[JSON.stringify(items)],
	);
	return rows as Reserved[];
}

/** confirm_operations of the reserved items, succeeded unless `report` says otherwise. */
async function confirm(
	c: Client,
	items: ReturnType<typeof reserveItems>,
	reserved: { idx: number; lease_token: string }[],
	schemaSql = db.schemaSql,
	report: Record<string, unknown> = { o: 'succeeded', resp: {} },
) {
	const conf = reserved.map((r) => ({ i: r.idx, k: items[r.idx].k, tok: r.lease_token, ref: `ref-${r.idx}`, ...report }));
	const { rows } = await c.query(
		`SELECT idx, result, status FROM ${schemaSql}.confirm_operations($1::jsonb, '{}'::jsonb) ORDER BY idx`,
		[JSON.stringify(conf)],
	);
	return rows as { idx: number; result: string; status: string }[];
}

/**
 * A schema of its own whose plans are made on a tiny table: `body` gets the schema, the
 * connection `c` the test makes its plans (and later reads them) on, and `other`, the connection
 * that piles rows up without touching c's plans. Autovacuum is off for the ledger table, so no
 * ANALYZE replaces the plans meanwhile.
 */
async function withSmallTablePlans(
	prefix: string,
	body: (t: { schema: string; schemaSql: string; pool: Awaited<ReturnType<typeof testDatabase>>['pool']; c: Client; other: Client }) => Promise<void>,
) {
	const fresh = await testDatabase({ prefix });
	await fresh.pool.query(`ALTER TABLE ${fresh.schemaSql}.operations SET (autovacuum_enabled = false)`);
	const c = new Client({ connectionString: DATABASE_URL });
	const other = new Client({ connectionString: DATABASE_URL });
	try {
		await c.connect();
		await other.connect();
		await body({ schema: fresh.schema, schemaSql: fresh.schemaSql, pool: fresh.pool, c, other });
	} finally {
		await c.end();
		await other.end();
		await fresh.drop();
	}
}

describe('confirm_operations under stale statistics', () => {
	it('locks and updates a 1,000-item batch by primary-key lookups, with no join filter over all rows', async () => {
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		try {
			// History: 3,000 settled operations and 25 reserved ones, then statistics.
			for (let b = 0; b < 3; b++) {
				const items = reserveItems(`old${b}`, 1000);
				const done = await confirm(c, items, await reserve(c, items));
				expect(done.every((r) => r.result === 'recorded')).toBe(true);
			}
			await reserve(c, reserveItems('few', 25));
			await c.query(`ANALYZE ${db.schemaSql}.operations`);

			const logs = await watchExecutedPlans(c);
			const items = reserveItems('big', 1000);
			const reserved = await reserve(c, items);
			expect(reserved.filter((r) => r.outcome === 'proceed')).toHaveLength(1000);
			logs.length = 0;
			const results = await confirm(c, items, reserved);
			expect(results).toHaveLength(1000);
			expect(results.every((r) => r.result === 'recorded' && r.status === 'succeeded')).toBe(true);

			// Phase 1 is the statement with the `locked` step.
			const phase1 = logs.filter((m) => m.includes('locked AS'));
			expect(phase1).toHaveLength(1);
			const plan = phase1[0];
			const removed = [...plan.matchAll(/Rows Removed by Join Filter: (\d+)/g)].map((m) => Number(m[1]));
			expect(removed.reduce((a, b) => a + b, 0)).toBeLessThan(1000);
			// The rows are found by primary-key lookups, one per item (the `locked` step), never by a
			// scan of the reserved rows joined to the items. (The update may hash the locked rows
			// against the table where the table is small: that compares no pairs.)
			expect(plan).not.toMatch(/(using|on) operations_reserved_lease_idx/);
			const pkeyLoops = plan
				.split('\n')
				.filter((l) => /Index Scan (using|on) operations_pkey/.test(l))
				.map((l) => Number(/loops=(\d+)/.exec(l)?.[1]));
			expect(pkeyLoops).toContain(1000);
		} finally {
			await c.end();
		}
	});

	it('plans made while the table was small still lock and update by primary key once unconfirmed leases pile up', async () => {
		// PL/pgSQL keeps each statement's plan for the connection. Made on a table of a few rows,
		// the lookup of phase 1 once read operations_reserved_lease_idx (every reserved row, once per
		// item) and the UPDATE a sequential scan of the table, and kept both while reserved rows
		// whose leases were never confirmed piled up: a 1,000-item Confirm took 7 s against 20,000.
		await withSmallTablePlans('ol_bplan_small', async ({ schemaSql, c, other }) => {
			// Small batches on a small table, on the connection that confirms later: its plans are made here.
			for (let b = 0; b < 8; b++) {
				const items = reserveItems(`tiny${b}`, 10);
				const done = await confirm(c, items, await reserve(c, items, schemaSql), schemaSql);
				expect(done.every((r) => r.result === 'recorded')).toBe(true);
			}
			// 20,000 leases granted and never confirmed, on another connection, no statistics taken.
			for (let b = 0; b < 10; b++) await reserve(other, reserveItems(`open${b}`, 2000), schemaSql);
			const logs = await watchExecutedPlans(c);
			const items = reserveItems('after', 1000);
			const reserved = await reserve(c, items, schemaSql);
			expect(reserved.filter((r) => r.outcome === 'proceed')).toHaveLength(1000);
			logs.length = 0;
			const results = await confirm(c, items, reserved, schemaSql);
			expect(results.every((r) => r.result === 'recorded' && r.status === 'succeeded')).toBe(true);
			const phase1 = logs.filter((m) => m.includes('locked AS'));
			expect(phase1).toHaveLength(1);
			expect(phase1[0]).not.toMatch(/Seq Scan on operations|(using|on) operations_reserved_lease_idx/);
			// Every row read on operations is one of the batch's, looked up by key: 1,000 to lock, 1,000 to update.
			const readOnOperations = scanRows(phase1[0]).filter((x) => / on operations /.test(x.line));
			expect(readOnOperations.reduce((a, x) => a + x.total, 0)).toBeLessThanOrEqual(2000);
		});
	});

	it('the expiry of one lease updates that row by primary key, with thousands of expired leases and a plan from a small table', async () => {
		// ledger_expire_lease's UPDATE names the key, the status and the lease end: a plan made on a
		// few rows may read operations_reserved_lease_idx instead, every expired lease of the ledger.
		await withSmallTablePlans('ol_bplan_expire', async ({ schema, schemaSql, pool, c, other }) => {
			let clock = 0;
			const later = async () => setLedgerClock(pool, schema, (clock += 700));
			// On a small table, on the connection that looks later: leases run out and are found expired.
			for (let b = 0; b < 8; b++) {
				const items = reserveItems(`tiny${b}`, 3);
				expect((await reserve(c, items, schemaSql)).every((r) => r.outcome === 'proceed')).toBe(true);
				await later();
				expect((await reserve(c, items, schemaSql)).every((r) => r.outcome === 'needs_reconcile')).toBe(true);
			}
			// 20,000 leases granted on another connection, then all of them run out.
			for (let b = 0; b < 10; b++) await reserve(other, reserveItems(`open${b}`, 2000), schemaSql);
			await later();
			const logs = await watchExecutedPlans(c);
			expect((await reserve(c, reserveItems('open0', 1), schemaSql)).map((r) => r.outcome)).toEqual(['needs_reconcile']);
			const expiry = logs.filter((m) => /Query Text: UPDATE operations o\s+SET status = 'unknown', reason = 'lease expired/.test(m));
			expect(expiry).toHaveLength(1);
			const scans = scanRows(expiry[0]).filter((x) => / on operations /.test(x.line));
			expect(scans.length).toBeGreaterThanOrEqual(1);
			for (const x of scans) {
				expect(x.line).toMatch(/operations_pkey/);
				expect(x.total).toBeLessThanOrEqual(1);
			}
		});
	});

	it('the retry of a failed operation updates that row by primary key, with thousands of failed ones and a plan from a small table', async () => {
		// Reserve's retry UPDATE names the key and the status 'failed': a plan made on a few rows may
		// read operations_failed_idx (settled_at, operation_key), every failed operation of the ledger.
		await withSmallTablePlans('ol_bplan_retry', async ({ schemaSql, c, other }) => {
			const failed = { o: 'failed', reason: 'declined', retry: true };
			// On a small table, on the connection that retries later: failed operations reserved again.
			for (let b = 0; b < 8; b++) {
				const items = reserveItems(`tiny${b}`, 3);
				await confirm(c, items, await reserve(c, items, schemaSql), schemaSql, failed);
				expect((await reserve(c, items, schemaSql)).every((r) => r.outcome === 'proceed')).toBe(true);
			}
			// 20,000 failed (retryable) operations from another connection.
			for (let b = 0; b < 10; b++) {
				const items = reserveItems(`failed${b}`, 2000);
				await confirm(other, items, await reserve(other, items, schemaSql), schemaSql, failed);
			}
			const logs = await watchExecutedPlans(c);
			expect((await reserve(c, reserveItems('failed0', 1), schemaSql)).map((r) => r.outcome)).toEqual(['proceed']);
			const retry = logs.filter((m) => /Query Text: UPDATE operations o\s+SET status = 'reserved', attempt = o.attempt \+ 1/.test(m));
			expect(retry).toHaveLength(1);
			const scans = scanRows(retry[0]).filter((x) => / on operations /.test(x.line));
			expect(scans.length).toBeGreaterThanOrEqual(1);
			for (const x of scans) expect(x.line).toMatch(/operations_pkey/);
		});
	});
});
