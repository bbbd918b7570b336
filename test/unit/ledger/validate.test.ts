import { buildOperationKey, checkLeaseSeconds, checkOperationKey } from '../../../src/ledger/validate';
import { InputError } from '../../../src/errors';
import { prepareReserveItem } from '../../../src/ledger/reserve';
import { prepareConfirmItem } from '../../../src/ledger/confirm';

describe('operation keys', () => {
	it('builds resource:action:entity:version', () => {
		expect(buildOperationKey({ resource: 'invoice', action: 'create', entity: 'customer-42', version: 'v3' })).toBe('invoice:create:customer-42:v3');
		expect(buildOperationKey({ resource: 'payment', action: 'charge', entity: 1001, version: 'v1' })).toBe('payment:charge:1001:v1');
	});

	it.each([
		['empty string', ''],
		['blank', '   '],
		['undefined', undefined],
		['null', null],
	])('rejects an %s key', (_n, key) => {
		expect(() => checkOperationKey(key)).toThrow(/operation key is empty/);
	});

	it.each([
		['an object', {}, /must be a string/],
		['leading space', ' a', /white space/],
		['a NUL byte', 'a\u0000b', /control character/],
		['a line break', 'a\nb', /control character/],
		['513 bytes', 'x'.repeat(513), /513 bytes/],
		['a lone surrogate', 'a\uD800', /surrogate/],
	])('rejects a key with %s', (_n, key, msg) => {
		expect(() => checkOperationKey(key)).toThrow(msg);
	});

	it.each([
		['trailing space', 'a ', /leading or trailing white space/],
		['a space before a separator', 'a :b', /next to a ":"/],
		['a space after a separator', 'a: b', /next to a ":"/],
		['a tab', 'a\tb', /control character/],
		['DEL', 'a\u007fb', /control character/],
	])('rejects a printable-looking key with %s', (_n, key, msg) => {
		expect(() => checkOperationKey(key)).toThrow(msg);
	});

	it('takes plain ASCII keys as they are, spaces inside segments included, up to 512 bytes', () => {
		for (const key of ['a', 'payment:charge:order 7:v1', '~!@#$%^&*()_+{}|"<>?`-=[]\\;\',./', 'x'.repeat(512), ':', 'a::b']) {
			expect(checkOperationKey(key)).toBe(key);
		}
	});

	it('counts bytes, not characters', () => {
		expect(() => checkOperationKey('é'.repeat(256))).not.toThrow();
		expect(() => checkOperationKey('é'.repeat(257))).toThrow(/514 bytes/);
	});

	it('rejects empty parts and parts containing the separator', () => {
		expect(() => buildOperationKey({ resource: 'a', action: '', entity: 'e', version: 'v1' })).toThrow(/part "action" is empty/);
		expect(() => buildOperationKey({ resource: 'a', action: 'b', entity: 'x:y', version: 'v1' })).toThrow(/contains ":"/);
	});
});

describe('lease seconds', () => {
	it.each([0, -5, 1.5, 604801, NaN, 'abc', null])('rejects %p', (v) => {
		expect(() => checkLeaseSeconds(v)).toThrow(InputError);
	});
	it('accepts whole seconds in range, also as numeric strings', () => {
		expect(checkLeaseSeconds(1)).toBe(1);
		expect(checkLeaseSeconds('300')).toBe(300);
		expect(checkLeaseSeconds(604800)).toBe(604800);
	});
});

describe('prepareReserveItem', () => {
	it('fingerprints the canonical request', () => {
		const a = prepareReserveItem(0, { operationKey: 'k', request: JSON.parse('{"b":1.0,"a":2}'), leaseSeconds: 60 });
		const b = prepareReserveItem(1, { operationKey: 'k', request: { a: 2, b: 1 }, leaseSeconds: 60 });
		expect(a.fingerprint).toBe(b.fingerprint);
		expect(a.canonicalRequest).toBe('{"a":2,"b":1}');
	});

	it('rejects a request that is not JSON', () => {
		expect(() => prepareReserveItem(0, { operationKey: 'k', request: { n: BigInt(2) }, leaseSeconds: 60 })).toThrow(/request\.n: is a BigInt/);
	});

	it('rejects a request over 1 MiB', () => {
		expect(() => prepareReserveItem(0, { operationKey: 'k', request: { s: 'x'.repeat(1024 * 1024) }, leaseSeconds: 60 })).toThrow(/at most 1048576/);
	});
});

describe('prepareConfirmItem', () => {
	const token = '0b0e8b7e-6a57-4f3c-9d0a-0a7f4d2a8c11';

	it('requires a lease token', () => {
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: undefined, outcome: 'succeeded' })).toThrow(/Proceed/);
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: 'nope', outcome: 'succeeded' })).toThrow(/not a UUID/);
	});

	it('rejects an unknown outcome', () => {
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: token, outcome: 'maybe' })).toThrow(/succeeded, failed or unknown/);
	});

	it('rejects a response that cannot be stored', () => {
		const circular: Record<string, unknown> = {};
		circular.me = circular;
		expect(() => prepareConfirmItem(0, { operationKey: 'k', leaseToken: token, outcome: 'succeeded', response: circular })).toThrow(/response cannot be stored.*circular/);
	});

	it('truncates an oversized response but keeps the reference, or rejects it when asked', () => {
		const big = { blob: 'y'.repeat(5000) };
		const t = prepareConfirmItem(0, { operationKey: 'k', leaseToken: token, outcome: 'succeeded', externalRef: 'pay_9', response: big, maxResponseBytes: 1000 });
		expect(t.responseTruncated).toBe(true);
		expect(t.externalRef).toBe('pay_9');
		expect(JSON.parse(t.responseJson)).toMatchObject({ truncated: true, originalBytes: 5011 });
		expect(() =>
			prepareConfirmItem(0, { operationKey: 'k', leaseToken: token, outcome: 'succeeded', response: big, maxResponseBytes: 1000, oversize: 'error' }),
		).toThrow(/5011 bytes/);
	});

	it('keeps retryable only for failures', () => {
		expect(prepareConfirmItem(0, { operationKey: 'k', leaseToken: token, outcome: 'failed', retryable: true }).retryable).toBe(true);
		expect(prepareConfirmItem(0, { operationKey: 'k', leaseToken: token, outcome: 'unknown', retryable: true }).retryable).toBe(false);
	});
});

describe('one key rule for both key modes', () => {
	const parts = (entity: unknown) => ({ resource: 'payment', action: 'charge', entity, version: 'v1' });

	it.each([
		['a trailing space', 'ent-X '],
		['a leading space', ' ent-X'],
		['a tab', 'ent-X\t'],
		['a no-break space', 'ent-X\u00a0'],
		['a BOM', '\ufeffent-X'],
	])('rejects %s in Build From Parts and in Custom Key alike (never trims)', (_n, entity) => {
		expect(() => buildOperationKey(parts(entity))).toThrow(InputError);
		expect(() => buildOperationKey(parts(entity))).toThrow(/white space|control character|invisible character/);
		expect(() => checkOperationKey(`payment:charge:${entity}:v1`)).toThrow(/white space|control character|invisible character/);
	});

	it('NFC-normalises in both modes: composed and decomposed spellings are one key', () => {
		const composed = 'caf\u00e9';
		const decomposed = 'cafe\u0301';
		expect(buildOperationKey(parts(decomposed))).toBe(`payment:charge:${composed}:v1`);
		expect(checkOperationKey(`payment:charge:${decomposed}:v1`)).toBe(`payment:charge:${composed}:v1`);
		expect(buildOperationKey(parts(composed))).toBe(checkOperationKey(`payment:charge:${decomposed}:v1`));
		// Compatibility characters are not folded (NFC, not NFKC): "ﬁ" stays distinct from "fi".
		expect(checkOperationKey('\ufb01')).not.toBe(checkOperationKey('fi'));
	});

	it('Reserve fingerprints the same request under the normalised key', () => {
		const a = prepareReserveItem(0, { operationKey: 'k:cafe\u0301', request: {}, leaseSeconds: 60 });
		const b = prepareReserveItem(1, { operationKey: 'k:caf\u00e9', request: {}, leaseSeconds: 60 });
		expect(a.operationKey).toBe(b.operationKey);
		expect(a.settleSeconds).toBe(120);
	});

	it('the settle window has a floor above zero', () => {
		expect(() => prepareReserveItem(0, { operationKey: 'k', request: {}, leaseSeconds: 60, settleSeconds: 0 })).toThrow(/settle window/);
		expect(prepareReserveItem(0, { operationKey: 'k', request: {}, leaseSeconds: 60, settleSeconds: 1 }).settleSeconds).toBe(1);
	});

	it('requests with integers beyond ±(2^53 − 1) are item errors (I-JSON); as strings they are distinct', () => {
		expect(() => prepareReserveItem(0, { operationKey: 'k', request: { accountId: JSON.parse('9007199254740993') }, leaseSeconds: 60 })).toThrow(/request\.accountId.*as strings/);
		const a = prepareReserveItem(0, { operationKey: 'k', request: { accountId: '9007199254740993' }, leaseSeconds: 60 });
		const b = prepareReserveItem(0, { operationKey: 'k', request: { accountId: '9007199254740992' }, leaseSeconds: 60 });
		expect(a.fingerprint).not.toBe(b.fingerprint);
	});

	it('responses with such integers are item errors before anything is written', () => {
		expect(() =>
			prepareConfirmItem(0, { operationKey: 'k', leaseToken: '11111111-2222-4333-8444-555555555555', outcome: 'succeeded', response: { id: 2 ** 60 } }),
		).toThrow(/response\.id/);
	});
});
