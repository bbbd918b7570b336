/**
 * Control characters are item errors in EVERY key-like field: the test iterates the fields (each
 * validator the nodes use) against every kind of bad character, so a new field or a new kind is
 * one line here.
 */
import { buildOperationKey, checkOperationKey, LedgerInputError } from '../../src/ledger/validate';
import { prepareReserveItem } from '../../src/ledger/reserve';
import { checkClaimOptions } from '../../src/ledger/reconcile';
import { checkGroups } from '../../src/queue/dequeue';
import { prepareEnqueueInput } from '../../src/queue/enqueue';
import { checkGroupName, checkQueueName, QueueInputError } from '../../src/queue/types';
import { keyTextProblem } from '../../src/keyText';

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
		expect(err instanceof LedgerInputError || err instanceof QueueInputError).toBe(true);
		expect((err as Error).message).toMatch(/control character|lone UTF-16 surrogate/);
	});

	it.each(FIELDS)('%s accepts ordinary text, including non-ASCII', (_field, fn) => {
		expect(() => fn('Zürich-東京-ok')).not.toThrow();
	});

	it('names the character and its position', () => {
		expect(keyTextProblem('ab\u0000c')).toBe('contains a NUL character (a control character) at position 3');
		expect(keyTextProblem('a\u0085')).toBe('contains a control character (U+0085) at position 2');
		expect(keyTextProblem('fine')).toBeNull();
	});
});
