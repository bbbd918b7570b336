/**
 * Batches over the per-statement cap (src/db/batch.ts, 20,000 items) are sent in chunks inside
 * one transaction: every item is answered, in-batch duplicates keep their meaning across the
 * chunk boundary, and a failing chunk leaves nothing of the batch behind.
 */
import { MAX_STATEMENT_ITEMS, ONE_TRIP_MAX_BYTES } from '../../../src/db/batch';
import { encodeReserveBatch } from '../../../src/ledger/reserve';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { enqueue } from '../../../src/queue';
import { testDatabase } from '../../helpers/db';

jest.setTimeout(120_000);
let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ max: 3, prefix: 'ol_chunks' });
});
afterAll(async () => {
	await db.drop();
});

describe('one round trip up to ONE_TRIP_MAX_BYTES', () => {
	it('a 1,000-item Reserve near the bound, with quotes, backslashes, dollars and non-ASCII in its requests, is stored exactly as sent', async () => {
		// Text a literal must carry unchanged: quotes, backslashes (the E'' form), what looks like a
		// placeholder or a dollar quote, and characters beyond ASCII.
		const odd = (i: number) => `it's \\ \\' $1 $$ E'x' -- /* ${i} */ ; é\u{1F600}`;
		const items = Array.from({ length: 1000 }, (_, i) =>
			prepareReserveItem(i, { operationKey: `one-trip:${i}`, request: { i, note: odd(i), pad: 'p'.repeat(700) }, target: 'payments-api', leaseSeconds: 60 }),
		);
		const bytes = Buffer.byteLength(encodeReserveBatch(items), 'utf8');
		// Over the former 64 KiB bound, within the one-trip bound.
		expect(bytes).toBeGreaterThan(ONE_TRIP_MAX_BYTES / 2);
		expect(bytes).toBeLessThanOrEqual(ONE_TRIP_MAX_BYTES);
		const out = await reserveOperations(db.pool, db.ledgerSchema, items);
		expect(out.map((r) => r.outcome)).toEqual(items.map(() => 'proceed'));
		const { rows } = await db.pool.query(
			`SELECT operation_key, fingerprint, request->>'note' AS note FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'one-trip:%' ORDER BY (split_part(operation_key, ':', 2))::int`,
		);
		expect(rows.map((r) => r.note)).toEqual(items.map((_, i) => odd(i)));
		expect(rows.map((r) => r.fingerprint)).toEqual(items.map((it) => it.fingerprint));
	});
});

describe('chunked batches', () => {
	it(`reserve of ${MAX_STATEMENT_ITEMS * 2 + 5} items: all answered, a duplicate far apart is answered as in one statement`, async () => {
		const n = MAX_STATEMENT_ITEMS * 2 + 5;
		const items = Array.from({ length: n }, (_, i) => prepareReserveItem(i, { operationKey: i === n - 1 ? 'chunk:0' : `chunk:${i}`, request: { i: i === n - 1 ? 0 : i }, leaseSeconds: 60 }));
		const out = await reserveOperations(db.pool, db.ledgerSchema, items);
		expect(out).toHaveLength(n);
		expect(out.filter((r) => r.outcome === 'proceed')).toHaveLength(n - 1);
		// The last item repeats the first key: the same answer a single statement gives to an in-batch duplicate.
		const single = await reserveOperations(db.pool, db.ledgerSchema, [
			prepareReserveItem(0, { operationKey: 'single:1', request: { i: 0 }, leaseSeconds: 60 }),
			prepareReserveItem(1, { operationKey: 'single:1', request: { i: 0 }, leaseSeconds: 60 }),
		]);
		expect(out[n - 1].outcome).toBe(single[1].outcome);
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'chunk:%'`);
		expect(rows[0].n).toBe(n - 1);
	});

	it('a chunk that fails rolls back the chunks before it', async () => {
		const n = MAX_STATEMENT_ITEMS + 10;
		// A constraint (for this test only) that the LAST item breaks: the failure comes in the second chunk.
		const items = Array.from({ length: n }, (_, i) => ({ queue: 'chunked', group: 'normal', payload: { i } }));
		await db.pool.query(`ALTER TABLE ${db.schemaSql}.queue_tasks ADD CONSTRAINT chunk_test_refuse CHECK ((payload->>'i')::int <> ${n - 1})`);
		try {
			await expect(enqueue(db.pool, db.ledgerSchema, items)).rejects.toThrow(/chunk_test_refuse/);
		} finally {
			await db.pool.query(`ALTER TABLE ${db.schemaSql}.queue_tasks DROP CONSTRAINT chunk_test_refuse`);
		}
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.queue_tasks WHERE queue = 'chunked'`);
		expect(rows[0].n).toBe(0);
		const ok = await enqueue(db.pool, db.ledgerSchema, items);
		expect(ok).toHaveLength(n);
	});
});
