/**
 * Reserve Operation's default fingerprint: the business request, not its delivery.
 * The shapes are those n8n 2.33's Webhook node, Wait node and Form Trigger give an item.
 */
import { createHash } from 'node:crypto';
import { businessRequest } from '../../../src/ledger/businessRequest';
import { prepareReserveItem } from '../../../src/ledger/reserve';

const order = { orderId: 'order-7', amount: 4200, currency: 'EUR' };
const webhookItem = (body: unknown, extra: Record<string, unknown> = {}) => ({
	headers: { host: '127.0.0.1:5678', 'user-agent': 'curl/8.5', 'content-type': 'application/json', ...(extra.headers as object) },
	params: {},
	query: (extra.query as object) ?? {},
	body,
	webhookUrl: (extra.webhookUrl as string) ?? 'http://127.0.0.1:5678/webhook/pay',
	executionMode: (extra.executionMode as string) ?? 'production',
});
const fingerprint = (json: unknown) => prepareReserveItem(0, { operationKey: 'k', request: businessRequest(json).request, leaseSeconds: 60 }).fingerprint;

describe('businessRequest', () => {
	test('a Webhook item: its body alone', () => {
		expect(businessRequest(webhookItem(order))).toEqual({ request: order, source: 'webhook body' });
	});

	test('the same order again with another User-Agent, an X-Request-Id, a query string, through the test URL: one fingerprint', () => {
		const base = fingerprint(webhookItem(order));
		expect(fingerprint(webhookItem(order, { headers: { 'user-agent': 'python-requests/2.31', 'x-request-id': 'f00d' } }))).toBe(base);
		expect(fingerprint(webhookItem(order, { query: { utm_source: 'mail' } }))).toBe(base);
		expect(fingerprint(webhookItem(order, { webhookUrl: 'http://127.0.0.1:5678/webhook-test/pay', executionMode: 'test' }))).toBe(base);
		// Key order in the body does not matter either (RFC 8785).
		expect(fingerprint(webhookItem({ currency: 'EUR', amount: 4200, orderId: 'order-7' }))).toBe(base);
	});

	test('a different amount: another fingerprint', () => {
		expect(fingerprint(webhookItem({ ...order, amount: 9900 }))).not.toBe(fingerprint(webhookItem(order)));
	});

	test('a Wait node resumed by a webhook (no webhookUrl or executionMode) and a JWT payload: the body alone', () => {
		expect(businessRequest({ headers: {}, params: {}, query: {}, body: order }).request).toEqual(order);
		expect(businessRequest({ ...webhookItem(order), jwtPayload: { sub: 'u1', iat: 1 } }).request).toEqual(order);
	});

	test('an object with more fields than a webhook gives is not taken for one: the whole item (without ledger)', () => {
		const json = { headers: { a: 1 }, body: 'Hello', subject: 'Invoice', to: 'a@example.com' };
		expect(businessRequest(json)).toEqual({ request: json, source: 'item' });
		// headers must be an object
		expect(businessRequest({ headers: 'x', body: 1 }).source).toBe('item');
	});

	test('a Form Trigger item: its fields without submittedAt, formMode and headers', () => {
		const form = { Order: 'order-7', Amount: 42, submittedAt: '2026-12-01T10:00:00.000+00:00', formMode: 'production', headers: { 'user-agent': 'x' } };
		expect(businessRequest(form)).toEqual({ request: { Order: 'order-7', Amount: 42 }, source: 'form fields' });
		const again = { ...form, submittedAt: '2026-12-01T10:05:00.000+00:00', formMode: 'test' };
		expect(fingerprint(again)).toBe(fingerprint(form));
		expect(businessRequest({ ...form, formQueryParameters: { ref: 'r1' } }).request).toEqual({ Order: 'order-7', Amount: 42, formQueryParameters: { ref: 'r1' } });
	});

	test('any other item: its JSON without the ledger field of an earlier Reserve', () => {
		const json = { ...order, ledger: { leaseToken: 'x', attempt: 1 } };
		expect(businessRequest(json)).toEqual({ request: order, source: 'item' });
		expect(businessRequest([1, 2])).toEqual({ request: [1, 2], source: 'item' });
		expect(businessRequest('text')).toEqual({ request: 'text', source: 'item' });
	});

	test('the fingerprint is SHA-256 of the canonical body', () => {
		const expected = createHash('sha256').update('{"amount":4200,"currency":"EUR","orderId":"order-7"}').digest('hex');
		expect(fingerprint(webhookItem(order))).toBe(expected);
	});
});
