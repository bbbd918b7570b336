/** Caps and chunking (src/db/batch.ts), the queue payload cap and the Max Response Size option. */
import { BatchTooLargeError, MAX_BATCH_ITEMS, ONE_TRIP_MAX_BYTES, planChunks, queryChunked } from '../../../src/db/batch';
import { checkMaxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES } from '../../../src/ledger/confirm';
import { InputError } from '../../../src/errors';
import { MAX_PAYLOAD_BYTES, prepareEnqueueInput } from '../../../src/queue/enqueue';
import { quoteLiteral } from '../../../src/db/bounds';

/** A pool stand-in that records every text sent and answers as Postgres would for a one-row statement. */
function recordingPool() {
	const sent: string[] = [];
	/** The client deadline (pg's query_timeout, ms) each round trip carried. */
	const deadlines: Array<number | undefined> = [];
	const row = { ok: 1 };
	const client = {
		query: async (q: string | { text: string; query_timeout?: number }) => {
			const text = typeof q === 'string' ? q : q.text;
			deadlines.push(typeof q === 'string' ? undefined : q.query_timeout);
			sent.push(text);
			// The one-trip form (BEGIN; SET LOCAL; SET LOCAL; statement; COMMIT) answers one result per statement.
			if (text.startsWith('BEGIN;') && text.endsWith('COMMIT')) return [{ rows: [] }, { rows: [] }, { rows: [] }, { rows: [row] }, { rows: [] }];
			return { rows: /^(BEGIN|COMMIT)/.test(text) ? [] : [row] };
		},
		on: () => undefined,
		removeListener: () => undefined,
		release: () => undefined,
	};
	return { sent, deadlines, pool: { totalCount: 0, connect: async () => client, query: client.query } };
}

describe('queryChunked round trips', () => {
	it('bounds every round trip by the client deadline: Statement Timeout + 2000 ms', async () => {
		const one = recordingPool();
		await queryChunked(one.pool as never, 'SELECT * FROM s.f($1::jsonb)', ['{"a":1}'], [null], [], { statementTimeoutMs: 1500, lockTimeoutMs: 100 });
		expect(one.deadlines).toEqual([3500]);
		const three = recordingPool();
		await queryChunked(three.pool as never, 'SELECT * FROM s.f($1::jsonb)', [JSON.stringify({ s: 'x'.repeat(ONE_TRIP_MAX_BYTES) })], [null]);
		expect(three.deadlines).toEqual([32_000, 32_000, 32_000]);
	});

	const sql = 'SELECT * FROM s.f($1::jsonb)';
	it('sends a one-chunk batch as ONE query: the bounded transaction with the JSON as a literal', async () => {
		const { sent, pool } = recordingPool();
		const rows = await queryChunked<{ ok: number }>(pool as never, sql, ['{"a":"it\'s"}', '{"b":2}'], [null, null]);
		expect(rows).toEqual([{ ok: 1 }]);
		expect(sent).toHaveLength(1);
		expect(sent[0]).toMatch(/^BEGIN; SET LOCAL statement_timeout = \d+; SET LOCAL lock_timeout = \d+; SELECT \* FROM s\.f\('\[\{"a":"it''s"\},\{"b":2\}\]'::jsonb\); COMMIT$/);
	});

	it('sends a single chunk over ONE_TRIP_MAX_BYTES with its JSON as a parameter, in three round trips of one transaction', async () => {
		const { sent, pool } = recordingPool();
		const big = JSON.stringify({ s: 'x'.repeat(ONE_TRIP_MAX_BYTES) });
		await queryChunked(pool as never, sql, [big], [null]);
		expect(sent).toEqual([expect.stringMatching(/^BEGIN; SET LOCAL/), sql, 'COMMIT']);
	});

	// A batch of 1,000 ordinary Reserve items (about 250 KiB) is one round trip; one of 10,000
	// (about 2.5 MiB, over ONE_TRIP_MAX_BYTES) goes with its JSON as a parameter.
	const items = (n: number) =>
		Array.from({ length: n }, (_, i) =>
			JSON.stringify({ idx: i, operation_key: `payment:charge:order-${i}:v1`, fingerprint: 'f'.repeat(64), target: 'payments-api', request: { orderId: `order-${i}`, customerId: `cus_${i % 97}`, amount: 1000 + i, currency: 'EUR' }, lease_seconds: 300 }),
		);
	it.each([
		[100, 1],
		[1000, 1],
		[10000, 3],
	])('a batch of %i ordinary items costs %i round trip(s)', async (n, trips) => {
		const parts = items(n);
		expect(Buffer.byteLength(`[${parts.join(',')}]`) > 20_000 * (n / 100)).toBe(true);
		const { sent, pool } = recordingPool();
		await queryChunked(pool as never, sql, parts, parts.map(() => null));
		expect(sent).toHaveLength(trips);
	});

	it("quotes the literal as pg's escapeLiteral does, with and without backslashes and quotes", () => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { escapeLiteral } = require('pg') as { escapeLiteral: (s: string) => string };
		const texts = ['', 'plain', "it's", "''", '\\', 'a\\b', "a\\'b", '{"k":"o\\"rder\\\\x\'"}', '\u00e9\u{1F600}', `${'x'.repeat(300_000)}'\\`];
		for (const t of texts) expect(quoteLiteral(t)).toBe(escapeLiteral(t));
	});
});

describe('planChunks', () => {
	it('respects the item and byte caps per statement', () => {
		const parts = Array.from({ length: 10 }, (_, i) => `{"i":${i}}`);
		expect(planChunks(parts, parts.map(() => null), { items: 3, bytes: 1e9 }).map((c) => c.length)).toEqual([3, 3, 3, 1]);
		const bytes = Buffer.byteLength(parts[0]) + 1;
		expect(planChunks(parts, parts.map(() => null), { items: 100, bytes: bytes * 4 }).map((c) => c.length)).toEqual([4, 4, 2]);
	});

	it('keeps items that share a key in the chunk of the first one', () => {
		const parts = Array.from({ length: 7 }, (_, i) => `{"i":${i}}`);
		const keys = ['a', 'b', 'c', 'a', 'd', 'b', null];
		const chunks = planChunks(parts, keys, { items: 2, bytes: 1e9 });
		const chunkOf = (i: number) => chunks.findIndex((c) => c.includes(i));
		expect(chunkOf(3)).toBe(chunkOf(0));
		expect(chunkOf(5)).toBe(chunkOf(1));
		expect(chunks.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
	});

	it('plans one chunk exactly when every item fits the caps, counting UTF-8 bytes (multi-byte text near the cap included)', () => {
		// Deterministic pseudo-random cases: ASCII, 2-, 3- and 4-byte characters, repeated keys.
		let seed = 7;
		const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
		const alphabet = ['a', 'é', '日', '😀', '"'];
		for (let c = 0; c < 400; c++) {
			const n = 1 + rnd(12);
			const parts = Array.from({ length: n }, () => `{"v":"${Array.from({ length: rnd(6) }, () => alphabet[rnd(alphabet.length)]).join('')}"}`);
			const keys = parts.map(() => (rnd(3) === 0 ? `k${rnd(3)}` : null));
			const bytes = parts.reduce((t, p) => t + Buffer.byteLength(p, 'utf8') + 1, 0);
			// Caps around the batch's real size: just under, at, just over, and far over.
			const limits = { items: n - 1 + rnd(3), bytes: bytes - 2 + rnd(5) };
			const chunks = planChunks(parts, keys, limits);
			expect(chunks.flat().sort((a, b) => a - b)).toEqual(parts.map((_, i) => i));
			if (n <= limits.items && bytes <= limits.bytes) expect(chunks).toEqual([parts.map((_, i) => i)]);
			else if (n > 1 && keys.every((k) => k === null)) expect(chunks.length).toBeGreaterThan(1);
			// Items that share a key are in one chunk; a chunk over a cap holds only items of keys it already had.
			for (const k of new Set(keys.filter((x) => x !== null))) {
				expect(new Set(chunks.map((ch, ci) => (ch.some((i) => keys[i] === k) ? ci : -1)).filter((ci) => ci >= 0)).size).toBe(1);
			}
		}
	});

	it('sends a multi-byte batch whose characters fit but whose UTF-8 bytes do not as several statements', async () => {
		// 'é' is 1 UTF-16 unit but 2 UTF-8 bytes: the length alone would under-count it.
		const parts = Array.from({ length: 3 }, () => `"${'é'.repeat(ONE_TRIP_MAX_BYTES / 4)}"`);
		const sql = 'SELECT * FROM s.f($1::jsonb)';
		const { sent, pool } = recordingPool();
		await queryChunked(pool as never, sql, parts.slice(0, 1), [null]);
		expect(sent).toHaveLength(1);
		const many = recordingPool();
		await queryChunked(many.pool as never, sql, parts, [null, null, null]);
		// Over ONE_TRIP_MAX_BYTES in UTF-8 (3 × 512 KiB), though under it in characters: the three-round-trip form.
		expect(many.sent.length).toBeGreaterThan(1);
	});

	it('refuses a batch over the per-call item cap before sending anything', () => {
		const n = MAX_BATCH_ITEMS + 1;
		expect(() => planChunks(new Array<string>(n).fill('1'), new Array<null>(n).fill(null))).toThrow(BatchTooLargeError);
	});
});

describe('queue payload cap', () => {
	it(`refuses a payload over ${MAX_PAYLOAD_BYTES} bytes as an item error, accepts one just under`, () => {
		const big = { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) };
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', payload: big })).toThrow(InputError);
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', payload: big })).toThrow(/at most 1048576 \(1 MiB\)/);
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES - 20) } })).not.toThrow();
	});
});

describe('Max Response Size', () => {
	it.each([['abc'], [NaN], [-1], [0], [1], [1.5], [Infinity], [16 * 1024 * 1024 + 1], ['12abc'], [{}], [true]])('refuses %p', (v) => {
		expect(() => checkMaxResponseBytes(v)).toThrow(InputError);
		expect(() => checkMaxResponseBytes(v)).toThrow(/^Max Response Size must be a whole number of bytes from 2 to 16777216/);
	});
	it.each([
		[undefined, DEFAULT_MAX_RESPONSE_BYTES],
		['', DEFAULT_MAX_RESPONSE_BYTES],
		[2, 2],
		['4096', 4096],
		[16 * 1024 * 1024, 16 * 1024 * 1024],
	])('accepts %p as %p', (v, expected) => {
		expect(checkMaxResponseBytes(v)).toBe(expected);
	});
});
