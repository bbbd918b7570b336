/**
 * A real HTTP server standing in for the outside world of the agent example, on 127.0.0.1 and a
 * port the OS picks:
 *
 *   POST /refunds        JSON {customerId, orderId, amount, currency}, header Idempotency-Key
 *                        → 201 {id: 're_<n>', status: 'succeeded', customerId, orderId, amount, currency}
 *                        Same key + same body → the stored response again (header Idempotent-Replayed: true).
 *                        Same key + different body → 422 idempotency_error.
 *   GET  /refunds?idempotency_key=K → 200 with that refund, or 404 (for a reconciler).
 *   POST /notifications  any JSON (the approval request with its links) → 202; kept in an inbox.
 *
 * refunds() is what the provider committed: the number of writes the test counts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Refund {
	id: string;
	status: 'succeeded';
	customerId: string;
	orderId: string;
	amount: number;
	currency: string;
	idempotencyKey: string | null;
}

export interface ProviderRequest {
	method: string;
	path: string;
	idempotencyKey: string | null;
	body: any;
	status: number;
	replayed: boolean;
}

export interface FakeRefundsApi {
	url: string;
	refunds(): Refund[];
	requests(): ProviderRequest[];
	/** Bodies POSTed to /notifications, in order. */
	notifications(): any[];
	close(): Promise<void>;
}

const bodyKey = (b: { customerId: string; orderId: string; amount: number; currency: string }) =>
	JSON.stringify([b.customerId, b.orderId, b.amount, b.currency]);

export async function startFakeRefundsApi(): Promise<FakeRefundsApi> {
	const refunds: Refund[] = [];
	const requests: ProviderRequest[] = [];
	const inbox: any[] = [];
	const byKey = new Map<string, { key: string; refund: Refund; response: string }>();

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => {
			const url = new URL(req.url ?? '/', 'http://127.0.0.1');
			const rawKey = req.headers['idempotency-key'];
			const idempotencyKey = typeof rawKey === 'string' && rawKey !== '' ? rawKey : null;
			let body: any = null;
			try {
				body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null;
			} catch {
				body = undefined;
			}
			const send = (status: number, payload: unknown, replayed = false, headers: Record<string, string> = {}) => {
				requests.push({ method: req.method ?? '', path: url.pathname, idempotencyKey, body, status, replayed });
				const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
				res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
				res.end(text);
			};

			if (url.pathname === '/notifications' && req.method === 'POST') {
				inbox.push(body);
				send(202, { accepted: true });
				return;
			}
			if (url.pathname === '/refunds' && req.method === 'GET') {
				const found = byKey.get(url.searchParams.get('idempotency_key') ?? '');
				if (found) send(200, found.refund);
				else send(404, { error: { type: 'not_found' } });
				return;
			}
			if (url.pathname !== '/refunds' || req.method !== 'POST') {
				send(404, { error: { type: 'not_found', message: `${req.method} ${url.pathname}` } });
				return;
			}
			const valid =
				body &&
				typeof body === 'object' &&
				typeof body.customerId === 'string' &&
				typeof body.orderId === 'string' &&
				typeof body.amount === 'number' &&
				body.amount > 0 &&
				typeof body.currency === 'string';
			if (!valid) {
				send(400, { error: { type: 'invalid_request', message: 'Expected {customerId, orderId, amount > 0, currency}' } });
				return;
			}
			if (idempotencyKey) {
				const stored = byKey.get(idempotencyKey);
				if (stored && stored.key !== bodyKey(body)) {
					send(422, { error: { type: 'idempotency_error', message: 'Key reused with different parameters' } });
					return;
				}
				if (stored) {
					send(201, stored.response, true, { 'idempotent-replayed': 'true' });
					return;
				}
			}
			const refund: Refund = {
				id: `re_${refunds.length + 1}`,
				status: 'succeeded',
				customerId: body.customerId,
				orderId: body.orderId,
				amount: body.amount,
				currency: body.currency,
				idempotencyKey,
			};
			refunds.push(refund);
			const response = JSON.stringify(refund);
			if (idempotencyKey) byKey.set(idempotencyKey, { key: bodyKey(body), refund, response });
			send(201, response);
		});
	});

	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => resolve());
	});
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		refunds: () => refunds.map((r) => ({ ...r })),
		requests: () => requests.slice(),
		notifications: () => inbox.slice(),
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
