/**
 * A real HTTP server standing in for a payments provider, on 127.0.0.1 and a port the OS picks.
 *
 *   POST /payments   JSON {customerId, amount, currency}, header Idempotency-Key
 *                    → 201 {id: 'pay_<n>', status: 'succeeded', amount, currency}
 *                    Same key + same body → the stored response again, header Idempotent-Replayed: true.
 *                    Same key + different body → 422 {error: {type: 'idempotency_error', ...}}.
 *   GET /payments?idempotency_key=K → 200 with that payment, or 404 (what a reconciler looks up).
 *
 * Fault modes, per request (a queue consumed one POST at a time, then the fixed mode):
 *   'succeed'                default
 *   'commit-then-hang'       records the payment, holds the answer until the client goes away (it
 *                            times out, or its process dies: the crash window)
 *   'commit-then-504'        records the payment, answers 504 as a gateway would
 *   'fail-before-commit-503' records nothing, answers 503
 * Replays of a committed key answer normally whatever the mode.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultMode = 'succeed' | 'commit-then-hang' | 'commit-then-504' | 'fail-before-commit-503';

export interface Payment {
	id: string;
	status: 'succeeded';
	amount: number;
	currency: string;
	customerId: string;
	idempotencyKey: string | null;
	createdAt: string;
}

export interface RecordedRequest {
	method: string;
	path: string;
	idempotencyKey: string | null;
	body: unknown;
	/** What the server did: the HTTP status sent, 'hang' when it never answered. */
	outcome: number | 'hang';
	mode: FaultMode;
	replayed: boolean;
	at: string;
	/** The client's TCP port: tells which process sent the request (see /proc/net/tcp). */
	remotePort: number | null;
}

export interface FakePaymentsApi {
	url: string;
	port: number;
	/** Every committed payment, in order. */
	payments(): Payment[];
	/** Every request received, in order. */
	requests(): RecordedRequest[];
	/**
	 * A barrier on the provider's commit: resolves with the first payment, committed before or
	 * after this call, for which `match` is true (its answer has not been sent yet when the mode
	 * holds it); rejects after `timeoutMs` (default 60 000 ms) or when the server closes.
	 */
	committed(match: (p: Payment) => boolean, timeoutMs?: number): Promise<Payment>;
	/** A fixed mode for every following POST, or a queue of modes for the next POSTs (then 'succeed'). */
	setMode(mode: FaultMode | FaultMode[]): void;
	close(): Promise<void>;
}

interface Stored {
	bodyKey: string;
	payment: Payment;
	responseBody: string;
}

/** Key-order-independent comparison of two JSON request bodies. */
function stableKey(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(stableKey).join(',')}]`;
	if (value && typeof value === 'object') {
		const obj = value as Record<string, unknown>;
		return `{${Object.keys(obj)
			.sort()
			.map((k) => `${JSON.stringify(k)}:${stableKey(obj[k])}`)
			.join(',')}}`;
	}
	return JSON.stringify(value);
}

/**
 * Starts the fake provider on 127.0.0.1.
 * @param options.port TCP port to listen on; 0 (default) = a free port chosen by the OS. Rejects if the port is taken.
 */
export async function startFakePaymentsApi(options: { port?: number } = {}): Promise<FakePaymentsApi> {
	const payments: Payment[] = [];
	const requests: RecordedRequest[] = [];
	const byKey = new Map<string, Stored>();
	let fixedMode: FaultMode = 'succeed';
	let queue: FaultMode[] = [];
	const hanging = new Set<http.ServerResponse>();
	/** Callers of committed() still waiting; each is offered every new payment. */
	const waiters = new Set<{ match: (p: Payment) => boolean; settle: (p: Payment | Error) => void }>();
	const offer = (p: Payment) => {
		for (const w of [...waiters]) if (w.match(p)) w.settle({ ...p });
	};

	const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
		const text = typeof body === 'string' ? body : JSON.stringify(body);
		res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
		res.end(text);
	};

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => {
			const url = new URL(req.url ?? '/', 'http://127.0.0.1');
			const rawKey = req.headers['idempotency-key'];
			const idempotencyKey = typeof rawKey === 'string' && rawKey !== '' ? rawKey : null;
			const remotePort = req.socket.remotePort ?? null;
			const record = (r: Omit<RecordedRequest, 'method' | 'path' | 'idempotencyKey' | 'at' | 'remotePort'>) =>
				requests.push({ method: req.method ?? '', path: url.pathname, idempotencyKey, at: new Date().toISOString(), remotePort, ...r });

			if (url.pathname === '/payments' && req.method === 'GET') {
				const key = url.searchParams.get('idempotency_key');
				const found = key ? byKey.get(key) : undefined;
				const status = found ? 200 : 404;
				record({ body: null, outcome: status, mode: 'succeed', replayed: false });
				if (found) send(res, 200, found.payment);
				else send(res, 404, { error: { type: 'not_found', message: `No payment with idempotency key ${key ?? '(none)'}` } });
				return;
			}
			if (url.pathname !== '/payments' || req.method !== 'POST') {
				record({ body: null, outcome: 404, mode: 'succeed', replayed: false });
				send(res, 404, { error: { type: 'not_found', message: `${req.method} ${url.pathname}` } });
				return;
			}

			let body: { customerId?: unknown; amount?: unknown; currency?: unknown };
			try {
				body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
			} catch {
				record({ body: null, outcome: 400, mode: 'succeed', replayed: false });
				send(res, 400, { error: { type: 'invalid_request', message: 'Body is not JSON' } });
				return;
			}
			if (
				!body ||
				typeof body !== 'object' ||
				typeof body.customerId !== 'string' ||
				typeof body.amount !== 'number' ||
				!Number.isInteger(body.amount) ||
				body.amount <= 0 ||
				typeof body.currency !== 'string'
			) {
				record({ body, outcome: 400, mode: 'succeed', replayed: false });
				send(res, 400, {
					error: { type: 'invalid_request', message: 'Expected {customerId: string, amount: positive integer, currency: string}' },
				});
				return;
			}

			const bodyKey = stableKey({ customerId: body.customerId, amount: body.amount, currency: body.currency });
			if (idempotencyKey) {
				const stored = byKey.get(idempotencyKey);
				if (stored) {
					if (stored.bodyKey !== bodyKey) {
						record({ body, outcome: 422, mode: 'succeed', replayed: false });
						send(res, 422, {
							error: {
								type: 'idempotency_error',
								message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
							},
						});
						return;
					}
					record({ body, outcome: 201, mode: 'succeed', replayed: true });
					send(res, 201, stored.responseBody, { 'idempotent-replayed': 'true' });
					return;
				}
			}

			const mode = queue.length ? (queue.shift() as FaultMode) : fixedMode;
			if (mode === 'fail-before-commit-503') {
				record({ body, outcome: 503, mode, replayed: false });
				send(res, 503, { error: { type: 'service_unavailable', message: 'Try again later' } });
				return;
			}
			const payment: Payment = {
				id: `pay_${payments.length + 1}`,
				status: 'succeeded',
				amount: body.amount,
				currency: body.currency,
				customerId: body.customerId,
				idempotencyKey,
				createdAt: new Date().toISOString(),
			};
			payments.push(payment);
			const responseBody = JSON.stringify({ id: payment.id, status: payment.status, amount: payment.amount, currency: payment.currency });
			if (idempotencyKey) byKey.set(idempotencyKey, { bodyKey, payment, responseBody });
			offer(payment);
			if (mode === 'commit-then-hang') {
				record({ body, outcome: 'hang', mode, replayed: false });
				hanging.add(res);
				res.on('close', () => hanging.delete(res));
				return;
			}
			if (mode === 'commit-then-504') {
				record({ body, outcome: 504, mode, replayed: false });
				send(res, 504, { error: { type: 'gateway_timeout', message: 'Upstream timed out' } });
				return;
			}
			record({ body, outcome: 201, mode, replayed: false });
			send(res, 201, responseBody);
		});
	});

	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
	});
	const { port } = server.address() as AddressInfo;

	return {
		url: `http://127.0.0.1:${port}`,
		port,
		payments: () => payments.map((p) => ({ ...p })),
		requests: () => requests.map((r) => ({ ...r })),
		committed(match, timeoutMs = 60_000) {
			const done = payments.find(match);
			if (done) return Promise.resolve({ ...done });
			return new Promise<Payment>((resolve, reject) => {
				const waiter = {
					match,
					settle: (p: Payment | Error) => {
						clearTimeout(timer);
						waiters.delete(waiter);
						if (p instanceof Error) reject(p);
						else resolve(p);
					},
				};
				const timer = setTimeout(() => waiter.settle(new Error(`no matching payment was committed within ${timeoutMs} ms`)), timeoutMs);
				waiters.add(waiter);
			});
		},
		setMode(mode) {
			if (Array.isArray(mode)) queue = [...mode];
			else {
				queue = [];
				fixedMode = mode;
			}
		},
		close: () =>
			new Promise<void>((resolve) => {
				for (const res of hanging) res.destroy();
				hanging.clear();
				for (const w of [...waiters]) w.settle(new Error('the fake payments API was closed'));
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
