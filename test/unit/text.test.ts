import { cutAny, cutText } from '../../src/text';
import { prepareConfirmItem } from '../../src/ledger/confirm';
import { classifyHttpResult } from '../../src/ledger/classify';
import { classifyLookup } from '../../src/ledger/reconcile/lookup';
import { prepareResolveItem } from '../../src/ledger/reconcile/resolve';
import { checkClaimOptions } from '../../src/ledger/reconcile/claim';
import { buildOperationKey, checkLeaseSeconds, checkSettleSeconds } from '../../src/ledger/validate';
import { ledgerSchema } from '../../src/db/identifiers';
import { batchFailure } from '../../nodes/shared/items';

const EMOJI = '\u{1F600}'; // U+1F600: surrogates D83D DE00
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** `n - 1` ASCII units then an emoji, so the pair straddles the limit `n` (units n-1 and n). */
const straddle = (n: number, tail = 'zzzz') => 'a'.repeat(n - 1) + EMOJI + tail;
const TOKEN = '11111111-2222-4333-8444-555555555555';

describe('cutText: cuts on code-point boundaries', () => {
	it('drops a surrogate pair that straddles the limit instead of splitting it', () => {
		const s = straddle(10);
		expect(cutText(s, 10)).toBe('a'.repeat(9));
		expect(cutText(s, 11)).toBe('a'.repeat(9) + EMOJI);
		expect(cutText(s, 9)).toBe('a'.repeat(9));
		expect(cutText('abc', 10)).toBe('abc');
		expect(cutText('abc', -1)).toBe('');
		expect(cutText(EMOJI, 1)).toBe('');
		expect(cutAny(12345, 3)).toBe('123');
	});

	it('leaves no lone surrogate at any limit', () => {
		const s = `${EMOJI}x${EMOJI}${EMOJI}é${EMOJI}`;
		for (let n = 0; n <= s.length + 1; n++) expect(LONE.test(cutText(s, n))).toBe(false);
	});
});

describe('every cut site keeps valid Unicode with a surrogate pair across its limit', () => {
	it('Confirm: the 1024-unit preview of an oversized response', () => {
		// Canonical JSON of a string starts with a quote: the pair sits at units 1023-1024 of the JSON.
		const c = prepareConfirmItem(0, { operationKey: 'k', leaseToken: TOKEN, outcome: 'succeeded', response: straddle(1023, 'x'.repeat(400)), maxResponseBytes: 100 });
		const stored = JSON.parse(c.responseJson) as { preview: string };
		expect(c.responseTruncated).toBe(true);
		expect(stored.preview.length).toBe(1023);
		expect(LONE.test(stored.preview)).toBe(false);
		expect(c.responseJson).not.toMatch(/\\ud83d/i);
	});

	it('Confirm: the 2000-unit reason', () => {
		const c = prepareConfirmItem(0, { operationKey: 'k', leaseToken: TOKEN, outcome: 'failed', reason: straddle(2000) });
		expect(c.reason).toBe('a'.repeat(1999));
	});

	it('Confirm: the 40-unit echo of a bad outcome', () => {
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: TOKEN, outcome: straddle(39) })).toThrow(/^(?![\s\S]*[\uD800-\uDBFF](?![\uDC00-\uDFFF]))/);
	});

	it('Resolve: the 1024-unit preview and the 2000-unit reason', () => {
		const big = straddle(1023, 'x'.repeat(300 * 1024));
		const r = prepareResolveItem(0, { operationKey: 'k', claimToken: TOKEN, resolution: 'still_unknown', response: big, reason: straddle(2000) });
		const stored = JSON.parse(r.responseJson) as { preview: string };
		expect(stored.preview.length).toBe(1023);
		expect(r.reason).toBe('a'.repeat(1999));
	});

	it('Classify: the 500-unit error text', () => {
		const c = classifyHttpResult({ error: { message: straddle(500) } });
		expect(LONE.test(c.reason ?? '')).toBe(false);
		expect(c.reason).toContain('a'.repeat(499));
		expect(c.reason).not.toContain(EMOJI);
	});

	it('Lookup: the 300-unit failure text', () => {
		const c = classifyLookup({ error: { message: straddle(300) } }, null);
		expect(LONE.test(c.reason ?? '')).toBe(false);
		expect(c.reason).toBe(`lookup failed: ${'a'.repeat(299)}`);
	});

	it('validation messages: key part (60), lease and settle echo (40), claim options (40), schema name (80)', () => {
		const msgOf = (f: () => unknown): string => {
			try {
				f();
			} catch (e) {
				return (e as Error).message;
			}
			throw new Error('did not throw');
		};
		const texts = [
			msgOf(() => buildOperationKey({ resource: 'r', action: 'a', entity: straddle(60) + ':', version: 'v1' })),
			msgOf(() => checkLeaseSeconds(straddle(40))),
			msgOf(() => checkSettleSeconds(straddle(40))),
			msgOf(() => checkClaimOptions({ limit: straddle(40), settleSeconds: 0, claimSeconds: 1 })),
			msgOf(() => ledgerSchema(straddle(79))),
		];
		for (const t of texts) expect(LONE.test(t)).toBe(false);
		expect(texts[0]).toContain(`("${'a'.repeat(59)}")`);
	});

	it('batch failure messages: the 1000-unit database reason', () => {
		const fns = { continueOnFail: () => true, getNode: () => ({ name: 'n' }) } as never;
		const [item] = batchFailure(fns, Object.assign(new Error(straddle(1000)), { code: 'XX000' }), 'Reserve Operation', [0]);
		const msg = String(item.json.error);
		expect(LONE.test(msg)).toBe(false);
		expect(msg).toContain('a'.repeat(999));
		expect(msg).not.toContain(EMOJI);
	});
});

describe('a value Postgres cannot store fails its own item (or is made storable), never the batch', () => {
	const { storableText } = jest.requireActual('../../src/text') as typeof import('../../src/text');
	const { prepareFailInput } = jest.requireActual('../../src/queue/fail') as typeof import('../../src/queue/fail');
	const { prepareEnqueueInput } = jest.requireActual('../../src/queue/enqueue') as typeof import('../../src/queue/enqueue');
	const { prepareCompleteInput } = jest.requireActual('../../src/queue/complete') as typeof import('../../src/queue/complete');
	const { checkTaskId } = jest.requireActual('../../src/queue/types') as typeof import('../../src/queue/types');
	const { eventContextJson } = jest.requireActual('../../src/ledger/states') as typeof import('../../src/ledger/states');
	const { checkListOptions } = jest.requireActual('../../src/ledger/admin/list') as typeof import('../../src/ledger/admin/list');
	const task = { taskId: '1', leaseToken: TOKEN };

	it('storableText: NUL and lone surrogates become U+FFFD, pairs stay, the cut keeps pairs whole', () => {
		expect(storableText('a\u0000b\uD800c\uDC00d' + EMOJI, 100)).toBe('a\uFFFDb\uFFFDc\uFFFDd' + EMOJI);
		expect(storableText(straddle(5), 5)).toBe('aaaa');
		expect(LONE.test(storableText('\uDC00\uD800', 10))).toBe(false);
	});

	it('Fail: the 10,000-unit cut never splits a pair; a lone surrogate or NUL is replaced, not refused', () => {
		expect(prepareFailInput({ ...task, error: straddle(10_000) }).error).toBe('a'.repeat(9999));
		expect(prepareFailInput({ ...task, error: 'x\uD800y\u0000z' }).error).toBe('x\uFFFDy\uFFFDz');
		expect(prepareFailInput({ ...task, error: '' }).error).toBe('failed');
	});

	it('Confirm and Resolve: a reason with NUL or a lone surrogate is stored with U+FFFD (the outcome is not lost over it)', () => {
		expect(prepareConfirmItem(0, { operationKey: 'k', leaseToken: TOKEN, outcome: 'unknown', reason: 'HTTP 504 \u0000 \uDFFF' }).reason).toBe('HTTP 504 \uFFFD \uFFFD');
		expect(prepareResolveItem(0, { operationKey: 'k', claimToken: TOKEN, resolution: 'still_unknown', reason: 'lookup \uD83D' }).reason).toBe('lookup \uFFFD');
	});

	it('Confirm: a reference or response Postgres cannot store is the item\'s error (evidence is never altered)', () => {
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: TOKEN, outcome: 'succeeded', externalRef: 'pay\u0000' })).toThrow(/external reference contains a NUL/);
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: TOKEN, outcome: 'succeeded', response: { ['k\uD800']: 1 } })).toThrow(/lone UTF-16 surrogate/);
	});

	it.each([
		['+200000-01-01T00:00:00Z'],
		['0000-01-01T00:00:00Z'],
		['-000001-01-01T00:00:00Z'],
		['+275760-09-13T00:00:00Z'],
	])('Enqueue: Not Before %s is outside Postgres\' readable range: an item error', (nb) => {
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', notBefore: nb })).toThrow(/^Not before must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z/);
	});

	it('Enqueue: a five-digit year without its sign is not a date at all: an item error too', () => {
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', notBefore: '10000-01-01T00:00:00Z' })).toThrow(/^Not before is not a valid date/);
	});

	it('Enqueue: the range ends are accepted, a Date too; an invalid Date is refused', () => {
		expect(prepareEnqueueInput({ queue: 'q', group: 'g', notBefore: '0001-01-01T00:00:00Z' }).notBefore).toBe('0001-01-01T00:00:00.000Z');
		expect(prepareEnqueueInput({ queue: 'q', group: 'g', notBefore: '9999-12-31T23:59:59.999Z' }).notBefore).toBe('9999-12-31T23:59:59.999Z');
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', notBefore: new Date(Date.parse('+200000-01-01T00:00:00Z')) })).toThrow(/got \+200000-01-01T00:00:00.000Z/);
		expect(() => prepareEnqueueInput({ queue: 'q', group: 'g', notBefore: new Date(NaN) })).toThrow(/not a valid date: an invalid Date/);
	});

	it('task ids beyond the bigint range are refused before anything is sent', () => {
		expect(checkTaskId('9223372036854775807')).toBe('9223372036854775807');
		expect(() => checkTaskId('9223372036854775808')).toThrow(/up to 9223372036854775807/);
		expect(() => checkTaskId('9999999999999999999')).toThrow(/up to 9223372036854775807/);
		expect(() => checkTaskId(2 ** 60)).toThrow(/positive integer/);
	});

	it('Complete: a result Postgres cannot store (NUL, lone surrogate, BigInt) is the item\'s error', () => {
		expect(() => prepareCompleteInput({ ...task, result: { s: 'a\u0000' } })).toThrow(/^The result is not plain JSON: result\.s: contains a NUL/);
		expect(() => prepareCompleteInput({ ...task, result: ['\uDC00'] })).toThrow(/lone UTF-16 surrogate/);
		expect(() => prepareCompleteInput({ ...task, result: { n: 1n } })).toThrow(/BigInt/);
		expect(prepareCompleteInput({ ...task, result: { ok: true } }).result).toEqual({ ok: true });
	});

	it('event context: a node name with NUL or a lone surrogate is made storable', () => {
		expect(JSON.parse(eventContextJson({ nodeName: 'Reserve \uD800\u0000', executionId: '7', workflowId: undefined }))).toEqual({ nodeName: 'Reserve \uFFFD\uFFFD', executionId: '7' });
	});

	it('Admin List: a forged cursor (a timestamp Postgres cannot read, a key with a NUL) is the item\'s error', () => {
		const cursor = (at: string, key: string) => Buffer.from(JSON.stringify([at, key]), 'utf8').toString('base64url');
		expect(() => checkListOptions({ kind: 'unknown', cursor: cursor('+200000-01-01T00:00:00Z', 'k') })).toThrow(/cursor is not one this node returned/);
		expect(() => checkListOptions({ kind: 'unknown', cursor: cursor('2024-01-01T00:00:00.123456+00:00', 'k\u0000') })).toThrow(/cursor is not one this node returned/);
		expect(checkListOptions({ kind: 'unknown', cursor: cursor('2024-01-01T00:00:00.123456+00:00', 'k') }).cursor).toBeTruthy();
	});
});
