/**
 * Control characters, white space other than the plain space and invisible characters are item
 * errors in EVERY key-like field: the test iterates the fields (each validator the nodes use)
 * against every kind of bad character, so a new field or a new kind is one line here. The refused
 * list is checked against the Unicode properties it is made of (src/keyText.ts).
 */
import { buildOperationKey, checkOperationKey } from '../../src/ledger/validate';
import { InputError } from '../../src/errors';
import { prepareReserveItem } from '../../src/ledger/reserve';
import { checkClaimOptions } from '../../src/ledger/reconcile/claim';
import { checkGroups } from '../../src/queue/dequeue';
import { prepareEnqueueInput } from '../../src/queue/enqueue';
import { checkGroupName, checkQueueName } from '../../src/queue/types';
import { keyTextProblem, REFUSED_RANGES } from '../../src/keyText';

const BAD: Array<[string, string]> = [
	['NUL', '\u0000'],
	['SOH', '\u0001'],
	['tab', '\t'],
	['line feed', '\n'],
	['carriage return', '\r'],
	['unit separator', '\u001f'],
	['DEL', '\u007f'],
	['C1 PAD', '\u0080'],
	['C1 NEL', '\u0085'],
	['C1 APC', '\u009f'],
	['lone high surrogate', '\uD800'],
	['lone low surrogate', '\uDC00'],
	// Look-alikes: invisible characters and white space other than U+0020.
	['no-break space', '\u00a0'],
	['zero-width space', '\u200b'],
	['zero-width joiner', '\u200d'],
	['left-to-right mark', '\u200e'],
	['byte order mark', '\ufeff'],
	['soft hyphen', '\u00ad'],
	['ideographic space', '\u3000'],
	['narrow no-break space', '\u202f'],
	['line separator', '\u2028'],
	['word joiner', '\u2060'],
	['variation selector 16', '\ufe0f'],
	['Hangul filler', '\u3164'],
	['tag space (above U+FFFF)', '\u{e0020}'],
];

const okEnqueue = { queue: 'q', group: 'high', payload: {} };
const FIELDS: Array<[string, (text: string) => unknown]> = [
	['operation key (custom key)', (t) => checkOperationKey(`order:${t}:1`)],
	['operation key part resource', (t) => buildOperationKey({ resource: `pay${t}`, action: 'charge', entity: 'o-1', version: 'v1' })],
	['operation key part action', (t) => buildOperationKey({ resource: 'pay', action: `ch${t}arge`, entity: 'o-1', version: 'v1' })],
	['operation key part entity', (t) => buildOperationKey({ resource: 'pay', action: 'charge', entity: `o-${t}1`, version: 'v1' })],
	['operation key part version', (t) => buildOperationKey({ resource: 'pay', action: 'charge', entity: 'o-1', version: `v${t}1` })],
	['reserve target', (t) => prepareReserveItem(0, { operationKey: 'k:1', request: {}, target: `stripe${t}`, leaseSeconds: 60 })],
	['reconcile target filter', (t) => checkClaimOptions({ limit: 10, settleSeconds: 0, claimSeconds: 10, target: `stripe${t}` })],
	['queue name', (t) => checkQueueName(`emails${t}`)],
	['priority group', (t) => checkGroupName(`high${t}`)],
	['enqueue queue', (t) => prepareEnqueueInput({ ...okEnqueue, queue: `q${t}` })],
	['enqueue group', (t) => prepareEnqueueInput({ ...okEnqueue, group: `g${t}` })],
	['enqueue dedupe key', (t) => prepareEnqueueInput({ ...okEnqueue, dedupeKey: `invoice-${t}42` })],
	['dequeue group weights', (t) => checkGroups([{ name: `high${t}`, weight: 1 }])],
];

describe('key-like text refuses control characters and lone surrogates in every field', () => {
	const cases = FIELDS.flatMap(([field, fn]) => BAD.map(([kind, ch]) => [field, kind, fn, ch] as const));
	it.each(cases)('%s with %s', (_field, _kind, fn, ch) => {
		let err: unknown;
		try {
			fn(ch);
		} catch (e) {
			err = e;
		}
		expect(err).toBeDefined();
		expect(err).toBeInstanceOf(InputError);
		expect((err as Error).message).toMatch(/control character|lone UTF-16 surrogate|white space other than the plain space|invisible character/);
	});

	it.each(FIELDS)('%s accepts ordinary text, including non-ASCII', (_field, fn) => {
		expect(() => fn('Zürich-東京-ok')).not.toThrow();
	});

	it('names the character and its position', () => {
		expect(keyTextProblem('ab\u0000c')).toBe('contains a NUL character (a control character) at position 3');
		expect(keyTextProblem('a\u0085')).toBe('contains a control character (U+0085) at position 2');
		expect(keyTextProblem('pay\u200b123')).toBe('contains an invisible character (U+200B, zero-width space) at position 4; it would look like another key');
		expect(keyTextProblem('pay\u00a0123')).toBe('contains white space other than the plain space (U+00A0, no-break space) at position 4; it would look like another key');
		expect(keyTextProblem('fine')).toBeNull();
		expect(keyTextProblem('plain space is fine')).toBeNull();
	});

	it('the refused list is exactly Cc, White_Space and Default_Ignorable_Code_Point without U+0020, for this Node\'s Unicode', () => {
		const property = /[\p{Cc}\p{White_Space}\p{Default_Ignorable_Code_Point}]/u;
		const inList = (c: number) => REFUSED_RANGES.some(([a, b]) => c >= a && c <= b);
		const differ: string[] = [];
		for (let c = 0; c <= 0x10ffff; c++) {
			if (c >= 0xd800 && c <= 0xdfff) continue;
			const expected = c !== 0x20 && property.test(String.fromCodePoint(c));
			if (expected !== inList(c)) differ.push(c.toString(16));
		}
		expect(differ).toEqual([]);
		// And keyTextProblem refuses exactly the list (every listed code point, no neighbour).
		for (const [a, b] of REFUSED_RANGES) {
			for (const c of [a, b]) expect(keyTextProblem(`x${String.fromCodePoint(c)}y`)).not.toBeNull();
			for (const c of [a - 1, b + 1]) if (c >= 0 && !inList(c) && (c < 0xd800 || c > 0xdfff)) expect(keyTextProblem(`x${String.fromCodePoint(c)}y`)).toBeNull();
		}
	});

	it('look-alike keys are refused, not folded into another key (an operation key and a dedupe key)', () => {
		expect(() => checkOperationKey('pay_123\u200b')).toThrow(/invisible character \(U\+200B/);
		expect(() => checkOperationKey('pay\u00a0123')).toThrow(/white space other than the plain space/);
		expect(() => prepareEnqueueInput({ ...okEnqueue, dedupeKey: 'invoice\u200b42' })).toThrow(/invisible character/);
	});

	it('operation keys and dedupe keys are compared in Normalization Form C (UAX #15)', () => {
		expect(checkOperationKey('cafe\u0301:1')).toBe('caf\u00e9:1');
		expect(prepareEnqueueInput({ ...okEnqueue, dedupeKey: 'cafe\u0301' }).dedupeKey).toBe('caf\u00e9');
	});
});
