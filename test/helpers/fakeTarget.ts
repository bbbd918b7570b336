/**
 * A real HTTP server on 127.0.0.1 (a port the OS picks) standing in for a target that does NOT
 * honour Idempotency-Key: every write it commits is a new one, whatever the header says, as with
 * most APIs, email, chat or a plain insert. What a test counts is writes(): the target's truth.
 *
 *   POST|PUT|PATCH|DELETE <any path>  a write, handled by the next mode (below). A committed write
 *                                     answers {id: '<prefix><n>', status: 'succeeded', ...body}
 *                                     (prefix 're_' under /refunds, 'pay_' otherwise).
 *   GET <path>?idempotency_key=K      the first committed write carrying K at that path: 200 with
 *                                     it, or 404 (what a reconciler looks up). Not a write.
 *   POST /notifications               202, kept in notifications() (an approval link); not a write.
 *
 * Modes, per write (setModes: a queue consumed one write at a time, then the fixed mode):
 *   '201'              commit, answer 201 (default)
 *   '422', '429', '401' refuse before committing
 *   '500', '504'       commit, then answer that status (a gateway or a crash after the commit)
 *   'commit-then-hang' commit, never answer (the client's deadline fires)
 *   'commit-then-reset' commit, then destroy the connection without an answer
 *   'reset'            destroy the connection before committing
 *   'trickle'          commit, send the status line and headers, then one body byte every 200 ms
 * `beforeAnswer`: awaited after the commit and before the answer (a test holds a lock meanwhile).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type TargetMode = '201' | '422' | '429' | '401' | '500' | '504' | 'commit-then-hang' | 'commit-then-reset' | 'reset' | 'trickle';

export interface TargetWrite {
	id: string;
	method: string;
	path: string;
	idempotencyKey: string | null;
	headers: http.IncomingHttpHeaders;
	body: unknown;
	mode: TargetMode;
	at: string;
}

export interface TargetRequest {
	method: string;
	path: string;
	query: Record<string, string>;
	idempotencyKey: string | null;
	body: unknown;
	/** The status sent, or what happened instead. */
	outcome: number | 'hang' | 'reset' | 'trickle';
	committed: boolean;
}

export interface FakeTarget {
	url: string;
	port: number;
	/** Committed writes, in order. */
	writes(): TargetWrite[];
	/** Committed writes whose JSON body has `field` equal to `value` (e.g. the order id). */
	writesWhere(field: string, value: unknown): TargetWrite[];
	/** Every request, in order. */
	requests(): TargetRequest[];
	notifications(): unknown[];
	/** A fixed mode for every following write. */
	setMode(mode: TargetMode): void;
	/** Modes for the next writes, one each, then the fixed mode. */
	setModes(modes: TargetMode[]): void;
	beforeAnswer: ((w: TargetWrite) => Promise<void>) | null;
	reset(): void;
	close(): Promise<void>;
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export async function startFakeTarget(): Promise<FakeTarget> {
	let writes: TargetWrite[] = [];
	let requests: TargetRequest[] = [];
	let inbox: unknown[] = [];
	let fixed: TargetMode = '201';
	let queue: TargetMode[] = [];
	const open = new Set<http.ServerResponse>();
	const timers = new Set<NodeJS.Timeout>();

	const target: FakeTarget = {
		url: '',
		port: 0,
		writes: () => writes.map((w) => ({ ...w })),
		writesWhere: (field, value) => writes.filter((w) => (w.body as Record<string, unknown> | null)?.[field] === value),
		requests: () => requests.map((r) => ({ ...r })),
		notifications: () => [...inbox],
		setMode(mode) {
			queue = [];
			fixed = mode;
		},
		setModes(modes) {
			queue = [...modes];
		},
		beforeAnswer: null,
		reset() {
			writes = [];
			requests = [];
			inbox = [];
			queue = [];
			fixed = '201';
			target.beforeAnswer = null;
		},
		close: () =>
			new Promise<void>((resolve) => {
				for (const t of timers) clearInterval(t);
				for (const r of open) r.destroy();
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};

	const send = (res: http.ServerResponse, status: number, body: unknown) => {
		const text = JSON.stringify(body);
		res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
		res.end(text);
	};

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => {
			void (async () => {
				const url = new URL(req.url ?? '/', 'http://127.0.0.1');
				const method = req.method ?? 'GET';
				const rawKey = req.headers['idempotency-key'];
				const idempotencyKey = typeof rawKey === 'string' && rawKey !== '' ? rawKey : null;
				const text = Buffer.concat(chunks).toString('utf8');
				let body: unknown = text;
				try {
					body = text === '' ? null : JSON.parse(text);
				} catch {
					/* a text or form body */
				}
				const record = (outcome: TargetRequest['outcome'], committed: boolean) =>
					requests.push({ method, path: url.pathname, query: Object.fromEntries(url.searchParams), idempotencyKey, body, outcome, committed });

				if (method === 'POST' && url.pathname === '/notifications') {
					inbox.push(body);
					record(202, false);
					send(res, 202, { accepted: true });
					return;
				}
				if (!WRITE_METHODS.has(method)) {
					const key = url.searchParams.get('idempotency_key');
					const found = key ? writes.find((w) => w.path === url.pathname && w.idempotencyKey === key) : undefined;
					record(found ? 200 : 404, false);
					if (found) send(res, 200, { id: found.id, status: 'succeeded', ...(typeof found.body === 'object' ? (found.body as object) : {}) });
					else send(res, 404, { error: { type: 'not_found', message: `No write with idempotency key ${key ?? '(none)'}` } });
					return;
				}
				const mode = queue.length ? (queue.shift() as TargetMode) : fixed;
				if (mode === '422' || mode === '429' || mode === '401') {
					record(Number(mode), false);
					send(res, Number(mode), { error: { type: 'refused', message: `refused with ${mode} before anything was written` } });
					return;
				}
				if (mode === 'reset') {
					record('reset', false);
					req.socket.destroy();
					return;
				}
				const prefix = url.pathname.includes('refund') ? 're_' : 'pay_';
				const w: TargetWrite = { id: `${prefix}${writes.length + 1}`, method, path: url.pathname, idempotencyKey, headers: req.headers, body, mode, at: new Date().toISOString() };
				writes.push(w);
				if (target.beforeAnswer) await target.beforeAnswer(w);
				const answer = { id: w.id, status: 'succeeded', ...(typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) };
				if (mode === 'commit-then-hang') {
					record('hang', true);
					open.add(res);
					res.on('close', () => open.delete(res));
					return;
				}
				if (mode === 'commit-then-reset') {
					record('reset', true);
					req.socket.destroy();
					return;
				}
				if (mode === 'trickle') {
					record('trickle', true);
					open.add(res);
					res.writeHead(201, { 'content-type': 'application/json' });
					res.write('{');
					const t = setInterval(() => res.write(' '), 200);
					timers.add(t);
					res.on('close', () => {
						clearInterval(t);
						timers.delete(t);
						open.delete(res);
					});
					return;
				}
				const status = mode === '500' || mode === '504' ? Number(mode) : 201;
				record(status, true);
				send(res, status, status === 201 ? answer : { error: { type: 'server_error', message: `answered ${status} after the write was committed` } });
			})();
		});
	});
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => resolve());
	});
	target.port = (server.address() as AddressInfo).port;
	target.url = `http://127.0.0.1:${target.port}`;
	return target;
}
