import { cutAny, cutText } from '../../src/text';
import { prepareConfirmItem } from '../../src/ledger/confirm';
import { classifyHttpResult } from '../../src/ledger/classify';
import { classifyLookup, prepareResolveItem, checkClaimOptions } from '../../src/ledger/reconcile';
import { buildOperationKey, checkLeaseSeconds, checkSettleSeconds } from '../../src/ledger/validate';
import { quoteSchema } from '../../src/db/identifiers';
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
			msgOf(() => quoteSchema(straddle(79))),
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
