/**
 * Issue 11: the ledger tells the truth under pressure: bounded waits, serialization retries,
 * same-batch repeats, tokens at rest, cut text reaching Postgres.
 */
import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { prepareReserveItem, reserveOperations, REPEAT_IN_BATCH } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { LedgerBusyError } from '../../../src/db/bounds';
import { DATABASE_URL, testDatabase } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase();
});
afterAll(async () => {
	await db.drop();
});

const item = (i: number, key: string, request: unknown = { key }) => prepareReserveItem(i, { operationKey: key, request, leaseSeconds: 60 });

/** A second session that holds a row lock on `key` until release() is called. */
async function holdRowLock(key: string) {
	const c = new Client({ connectionString: DATABASE_URL });
	await c.connect();
	await c.query('BEGIN');
	await c.query(`SELECT 1 FROM ${db.schemaSql}.operations WHERE operation_key = $1 FOR UPDATE`, [key]);
	return {
		async release() {
			await c.query('ROLLBACK').catch(() => undefined);
			await c.end();
		},
	};
}

describe('bounded waits', () => {
	it('a key locked by another session answers busy within the lock timeout; the other keys of the batch are decided', async () => {
		await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'b:locked')]);
		const lock = await holdRowLock('b:locked');
		try {
			const t0 = Date.now();
			const res = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'b:locked'), item(1, 'b:free')], {}, { statementTimeoutMs: 10_000, lockTimeoutMs: 300 });
			const ms = Date.now() - t0;
			expect(res[0]).toMatchObject({ outcome: 'busy', retryable: true, leaseToken: null });
			expect(res[0].reason).toMatch(/locked by another transaction.*running it again is safe/);
			expect(res[1]).toMatchObject({ outcome: 'proceed' });
			expect(ms).toBeLessThan(3_000);
		} finally {
			await lock.release();
		}
		// Nothing was recorded for the busy item: the row is as the first Reserve left it.
		const { rows } = await db.pool.query(`SELECT event FROM ${db.schemaSql}.operation_events WHERE operation_key = 'b:locked' ORDER BY event_id`);
		expect(rows.map((r) => r.event)).toEqual(['reserved']);
	});

	it('Confirm answers busy for a locked key and records the others', async () => {
		const [a, b] = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'bc:locked'), item(1, 'bc:free')]);
		const lock = await holdRowLock('bc:locked');
		try {
			const res = await confirmOperations(
				db.pool,
				db.ledgerSchema,
				[
					prepareConfirmItem(0, { operationKey: 'bc:locked', leaseToken: a.leaseToken, outcome: 'succeeded', externalRef: 'p1' }),
					prepareConfirmItem(1, { operationKey: 'bc:free', leaseToken: b.leaseToken, outcome: 'succeeded', externalRef: 'p2' }),
				],
				{},
				{ statementTimeoutMs: 10_000, lockTimeoutMs: 300 },
			);
			expect(res.map((r) => r.result)).toEqual(['busy', 'recorded']);
		} finally {
			await lock.release();
		}
		const [again] = await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 'bc:locked', leaseToken: a.leaseToken, outcome: 'succeeded', externalRef: 'p1' })]);
		expect(again.result).toBe('recorded');
	});

	it('with one pool connection, a blocked key does not starve an unrelated key beyond the lock timeout', async () => {
		await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'p:locked')]);
		const one = new Pool({ connectionString: DATABASE_URL, max: 1, connectionTimeoutMillis: 3_000 });
		const lock = await holdRowLock('p:locked');
		try {
			const bounds = { statementTimeoutMs: 10_000, lockTimeoutMs: 500 };
			const t0 = Date.now();
			const [blocked, other] = await Promise.all([
				reserveOperations(one, db.ledgerSchema, [item(0, 'p:locked')], {}, bounds),
				reserveOperations(one, db.ledgerSchema, [item(0, 'p:other')], {}, bounds),
			]);
			expect(blocked[0].outcome).toBe('busy');
			expect(other[0].outcome).toBe('proceed');
			expect(Date.now() - t0).toBeLessThan(2_500);
		} finally {
			await lock.release();
			await one.end();
		}
	});

	it('a statement past the statement timeout is rolled back as a whole with a retry-safe error', async () => {
		// An uncommitted insert of the same new key makes Reserve's insert wait on that transaction.
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		await c.query('BEGIN');
		await c.query(`SELECT * FROM ${db.schemaSql}.reserve_operations($1::jsonb, '{}'::jsonb)`, [
			JSON.stringify([{ i: 0, k: 's:new', f: 'a'.repeat(64), a: 'sha256-jcs-rfc8785', t: null, l: 60, r: {} }]),
		]);
		try {
			const t0 = Date.now();
			const err = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 's:new'), item(1, 's:other')], {}, { statementTimeoutMs: 400, lockTimeoutMs: 60_000 }).catch((e) => e);
			expect(err).toBeInstanceOf(LedgerBusyError);
			expect(err.code).toBe('57014');
			expect(err.message).toMatch(/nothing of it was recorded; running it again is safe/);
			expect(Date.now() - t0).toBeLessThan(2_000);
		} finally {
			await c.query('ROLLBACK');
			await c.end();
		}
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.operations WHERE operation_key IN ('s:new', 's:other')`);
		expect(rows[0].n).toBe(0);
	});
});

describe('serializable isolation', () => {
	it('with default_transaction_isolation = serializable on the role, 24 concurrent Reserves of one new key: one Proceed, no errors', async () => {
		const role = `ol_ser_${randomBytes(4).toString('hex')}`;
		const admin = new Client({ connectionString: DATABASE_URL });
		await admin.connect();
		// A password, for servers that ask for one (the embedded Postgres of a bare machine does).
		const password = randomBytes(12).toString('hex');
		await admin.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}'`);
		await admin.query(`ALTER ROLE "${role}" SET default_transaction_isolation = 'serializable'`);
		await admin.query(`GRANT USAGE ON SCHEMA ${db.schemaSql} TO "${role}"`);
		await admin.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA ${db.schemaSql} TO "${role}"`);
		await admin.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${db.schemaSql} TO "${role}"`);
		const url = new URL(DATABASE_URL);
		url.username = role;
		url.password = password;
		const pool = new Pool({ connectionString: url.toString(), max: 24 });
		try {
			const { rows } = await pool.query('SHOW default_transaction_isolation');
			expect(rows[0].default_transaction_isolation).toBe('serializable');
			for (let round = 0; round < 3; round++) {
				const key = `ser:${round}`;
				const results = await Promise.all(Array.from({ length: 24 }, () => reserveOperations(pool, db.ledgerSchema, [item(0, key)])));
				const outcomes = results.map((r) => r[0].outcome);
				expect(outcomes.filter((o) => o === 'proceed')).toHaveLength(1);
				expect(outcomes.filter((o) => o !== 'proceed').every((o) => o === 'in_progress')).toBe(true);
			}
		} finally {
			await pool.end();
			await admin.query(`DROP OWNED BY "${role}"`);
			await admin.query(`DROP ROLE "${role}"`);
			await admin.end();
		}
	});
});

describe('same-batch repeats', () => {
	it('five items with one key and one request: one Proceed, four told they repeat item 0 of this batch', async () => {
		const res = await reserveOperations(db.pool, db.ledgerSchema, [0, 1, 2, 3, 4].map((i) => item(i, 'rep:1', { a: 1 })));
		expect(res.map((r) => r.outcome)).toEqual(['proceed', 'in_progress', 'in_progress', 'in_progress', 'in_progress']);
		expect(res.slice(1).map((r) => r.repeatOfItem)).toEqual([0, 0, 0, 0]);
		expect(res.slice(1).every((r) => r.reason === REPEAT_IN_BATCH)).toBe(true);
		expect(res[0].repeatOfItem).toBeNull();
		// Another execution's lease is not a repeat.
		const [other] = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'rep:1', { a: 1 })]);
		expect(other).toMatchObject({ outcome: 'in_progress', repeatOfItem: null, reason: null });
	});
});

describe('tokens at rest', () => {
	it('no lease token appears in any stored row or event, including stale confirmations', async () => {
		const [r1] = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 't:1')]);
		await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 't:1', leaseToken: r1.leaseToken, outcome: 'failed', retryable: true })]);
		const [r2] = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 't:1')]);
		const [stale] = await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 't:1', leaseToken: r1.leaseToken, outcome: 'succeeded', externalRef: 'x' })]);
		expect(stale.result).toBe('stale');
		const { rows } = await db.pool.query(
			`SELECT (SELECT string_agg(row_to_json(o)::text, '') FROM ${db.schemaSql}.operations o WHERE operation_key = 't:1') ||
			        (SELECT string_agg(row_to_json(e)::text, '') FROM ${db.schemaSql}.operation_events e WHERE operation_key = 't:1') AS all_text`,
		);
		const text: string = rows[0].all_text;
		for (const tok of [r1.leaseToken, r2.leaseToken]) {
			expect(text).not.toContain(String(tok));
			expect(text).not.toContain(String(tok).replace(/-/g, ''));
		}
		expect(text).toContain('stale_confirmation');
		expect(text).not.toContain('holderToken');
		// The live holder still confirms with its token.
		const [ok] = await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 't:1', leaseToken: r2.leaseToken, outcome: 'succeeded', externalRef: 'y' })]);
		expect(ok.result).toBe('recorded');
	});
});

describe('cut text reaches Postgres intact', () => {
	it('a response preview cut where an emoji straddles the 1,024-unit limit is recorded (no 22P02)', async () => {
		const [a, b] = await reserveOperations(db.pool, db.ledgerSchema, [item(0, 'cut:1'), item(1, 'cut:2')]);
		const response = { note: 'a'.repeat(1013) + '\u{1F600}'.repeat(600) };
		const res = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'cut:1', leaseToken: a.leaseToken, outcome: 'succeeded', externalRef: 'r1', response, maxResponseBytes: 1024 }),
			prepareConfirmItem(1, { operationKey: 'cut:2', leaseToken: b.leaseToken, outcome: 'failed', reason: 'x'.repeat(1999) + '\u{1F600}' }),
		]);
		expect(res.map((r) => r.result)).toEqual(['recorded', 'recorded']);
		const { rows } = await db.pool.query(`SELECT response, response_truncated FROM ${db.schemaSql}.operations WHERE operation_key = 'cut:1'`);
		expect(rows[0].response_truncated).toBe(true);
		expect(rows[0].response.preview.length).toBeLessThanOrEqual(1024);
	});
});
