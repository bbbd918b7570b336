/** Guarded HTTP Request's core rules (src/ledger/guardedHttp.ts): the request, the fingerprint, the verdict. */
import { classifySend, parseBody, prepareGuardedRequest, referenceAt } from '../../../src/ledger/guardedHttp';
import { InputError } from '../../../src/errors';

const base = { method: 'POST', url: 'https://api.example.com/v1/payments', bodyType: 'json', body: { amount: 1 }, timeoutMs: 10000, leaseSeconds: 300 };

describe('prepareGuardedRequest', () => {
	test('fingerprints method, URL, query and body, never the headers', () => {
		const a = prepareGuardedRequest({ ...base, headers: [{ name: 'X-Request-Id', value: 'r1' }], query: [{ name: 'v', value: '2' }] });
		const b = prepareGuardedRequest({ ...base, headers: [{ name: 'X-Request-Id', value: 'r2' }, { name: 'User-Agent', value: 'other' }], query: [{ name: 'v', value: '2' }] });
		expect(a.fingerprint).toEqual({ method: 'POST', url: 'https://api.example.com/v1/payments', query: { v: '2' }, body: { amount: 1 } });
		expect(b.fingerprint).toEqual(a.fingerprint);
		expect(a.idempotencyHeader).toBe('Idempotency-Key');
	});

	test('an explicit fingerprint replaces the default', () => {
		expect(prepareGuardedRequest({ ...base, fingerprint: { orderId: 'o1' } }).fingerprint).toEqual({ orderId: 'o1' });
	});

	test('a query or form name given twice becomes a list, in order', () => {
		const r = prepareGuardedRequest({ ...base, query: [{ name: 't', value: 'a' }, { name: 't', value: 'b' }], bodyType: 'form', body: [{ name: 'f', value: 1 }, { name: 'f', value: true }] });
		expect(r.query).toEqual({ t: ['a', 'b'] });
		expect(r.body).toEqual({ f: ['1', 'true'] });
	});

	test.each([
		[{ method: 'TRACE' }, /method must be one of/],
		[{ url: '' }, /URL is empty/],
		[{ url: 'api.example.com/x' }, /not an absolute URL/],
		[{ url: 'ftp://example.com/x' }, /http:\/\/ or https:\/\//],
		[{ url: 'https://u:p@example.com/x' }, /user name or password/],
		[{ timeoutMs: 0 }, /timeout must be a whole number of milliseconds from 1 to 600000/],
		[{ timeoutMs: 600001 }, /from 1 to 600000/],
		[{ timeoutMs: undefined }, /It is required/],
		[{ leaseSeconds: 14, timeoutMs: 10000 }, /must outlast the timeout \(10000 ms\) by at least 5 s/],
		[{ headers: [{ name: 'Bad Name', value: 'x' }] }, /not a valid header name/],
		[{ headers: [{ name: 'X-A', value: 'a\r\nX-B: b' }] }, /line break/],
		[{ headers: [{ name: 'idempotency-key', value: 'mine' }] }, /idempotency key's header/],
		[{ headers: [{ name: 'A', value: '1' }, { name: 'a', value: '2' }] }, /given twice/],
		[{ idempotencyHeader: 'Idem Key' }, /not a valid header name/],
		[{ body: { when: new Date(0) } }, /body is not plain JSON/],
		[{ bodyType: 'text', body: 5 }, /body must be text/],
		[{ bodyType: 'xml' }, /body type must be one of/],
	] as const)('refuses %j', (change, message) => {
		expect(() => prepareGuardedRequest({ ...base, ...change } as never)).toThrow(InputError);
		expect(() => prepareGuardedRequest({ ...base, ...change } as never)).toThrow(message);
	});

	test('an empty idempotency header name sends none', () => {
		expect(prepareGuardedRequest({ ...base, idempotencyHeader: '' }).idempotencyHeader).toBeNull();
	});
});

describe('classifySend', () => {
	test('answers follow the status table (docs/http-classification.md), overrides included', () => {
		expect(classifySend({ kind: 'answer', statusCode: 201, headers: {}, body: { id: 'p' } })).toMatchObject({ outcome: 'succeeded', body: { id: 'p' } });
		expect(classifySend({ kind: 'answer', statusCode: 422, headers: {}, body: null })).toMatchObject({ outcome: 'failed', retryable: false });
		expect(classifySend({ kind: 'answer', statusCode: 429, headers: {}, body: null })).toMatchObject({ outcome: 'failed', retryable: true });
		expect(classifySend({ kind: 'answer', statusCode: 504, headers: {}, body: null })).toMatchObject({ outcome: 'unknown' });
		expect(classifySend({ kind: 'answer', statusCode: 302, headers: {}, body: null })).toMatchObject({ outcome: 'unknown' });
		expect(classifySend({ kind: 'answer', statusCode: 409, headers: {}, body: null }, new Map([[409, 'failed']]))).toMatchObject({ outcome: 'failed', retryable: false });
	});

	test('no answer: refused or not found is failed, retryable; a reset, a timeout, the deadline, a cancel or anything else is unknown', () => {
		const err = (code: string, message: string) => ({ kind: 'error' as const, error: Object.assign(new Error(message), { code }) });
		expect(classifySend(err('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'))).toMatchObject({ outcome: 'failed', retryable: true });
		expect(classifySend(err('ENOTFOUND', 'getaddrinfo ENOTFOUND x.invalid'))).toMatchObject({ outcome: 'failed', retryable: true });
		expect(classifySend(err('ECONNRESET', 'socket hang up'))).toMatchObject({ outcome: 'unknown' });
		expect(classifySend(err('ECONNABORTED', 'timeout of 1000ms exceeded'))).toMatchObject({ outcome: 'unknown' });
		expect(classifySend(err('EWHATEVER', 'something odd'))).toMatchObject({ outcome: 'unknown', reason: expect.stringMatching(/^Unrecognised error/) });
		expect(classifySend({ kind: 'deadline', timeoutMs: 250 })).toMatchObject({ outcome: 'unknown', reason: expect.stringMatching(/within the timeout \(250 ms\)/) });
		expect(classifySend({ kind: 'cancelled' })).toMatchObject({ outcome: 'unknown' });
		// An error that carries the answer's status (n8n's NodeApiError): the table.
		expect(classifySend({ kind: 'error', error: { httpCode: '403', message: 'Forbidden' } })).toMatchObject({ outcome: 'failed', retryable: true });
	});
});

describe('parseBody and referenceAt', () => {
	test('JSON when the content type says so, otherwise the text; empty is null', () => {
		expect(parseBody('{"id":"a"}', 'application/json; charset=utf-8')).toEqual({ id: 'a' });
		expect(parseBody('{"id":"a"}', 'application/problem+json')).toEqual({ id: 'a' });
		expect(parseBody('{"id":', 'application/json')).toBe('{"id":');
		expect(parseBody('{"id":"a"}', 'text/plain')).toBe('{"id":"a"}');
		expect(parseBody('', 'application/json')).toBeNull();
	});

	test('the reference at a dot path, as text', () => {
		expect(referenceAt({ id: 'pay_1' }, 'id')).toBe('pay_1');
		expect(referenceAt({ data: { payment: { id: 42 } } }, 'data.payment.id')).toBe('42');
		expect(referenceAt({ id: { nested: true } }, 'id')).toBeNull();
		expect(referenceAt('text', 'id')).toBeNull();
		expect(referenceAt({ id: 'x' }, '')).toBeNull();
		expect(referenceAt({ id: 'x'.repeat(2000) }, 'id')!.length).toBeLessThanOrEqual(1000);
	});
});
