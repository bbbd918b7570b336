/**
 * Guarded HTTP Request, the n8n-free part: the request's rules, what is fingerprinted, how an
 * answer is classified and stored. The node (nodes/GuardedHttpRequest) reserves with
 * reserve_operations, sends with n8n's own request helper and records with confirm_operations, all
 * in one execution of one node, so any re-run of that node (n8n's Retry, a partial run in the
 * editor, a resent webhook, Retry On Fail) meets its own reservation and never sends again.
 *
 * Classification: the ledger's one question, "could the request have taken effect?", with the
 * table of src/ledger/classify.ts (docs/http-classification.md): 2xx succeeded; a refusal before
 * any effect failed (retryable or not); 408, 409, 3xx, 5xx, a timeout, a reset and anything
 * unrecognised unknown; connection refused or host not found failed, retryable (never sent).
 */
import { InputError } from '../errors';
import { assertJson, NotJsonError } from '../json/canonical';
import { cutText } from '../text';
import { classifyHttpResult, classifyStatus, type Classification, type StatusOverrides } from './classify';
import { TEXT_LIMITS } from '../limits';

/** The methods offered (a write is usually POST, PUT, PATCH or DELETE). */
export const GUARDED_METHODS = ['DELETE', 'GET', 'PATCH', 'POST', 'PUT'] as const;
export type GuardedMethod = (typeof GUARDED_METHODS)[number];

/** Body kinds: none, JSON (sent as application/json), form fields (x-www-form-urlencoded), raw text. */
export const BODY_TYPES = ['none', 'json', 'form', 'text'] as const;
export type BodyType = (typeof BODY_TYPES)[number];

/** The header the downstream idempotency key goes in unless configured otherwise. */
export const DEFAULT_IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Timeout bounds in milliseconds: 1 ms to 10 minutes; 10 s by default. */
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_TIMEOUT_MS = 600_000;
/** The lease must outlast the request's timeout by this much (ms): time to record the answer. */
export const LEASE_MARGIN_MS = 5_000;

/** RFC 9110 §5.6.2 token: what a header field name may contain. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export interface NameValue {
	name: string;
	value: string;
}

/** A request ready to send; everything in it was checked. */
export interface GuardedRequest {
	method: GuardedMethod;
	/** Absolute http(s) URL, as the WHATWG URL parser normalises it. */
	url: string;
	/** Header fields the user set (not the idempotency key, which is added at send time). */
	headers: Record<string, string>;
	/** Query parameters; a name given more than once becomes a list, in order. */
	query: Record<string, string | string[]>;
	bodyType: BodyType;
	/** JSON value (json), name -> value (form), text (text), or null (none). */
	body: unknown;
	/** Content-Type for a text body (default text/plain; charset=utf-8). */
	contentType: string | null;
	/** Milliseconds: the whole request (connect, send, answer) must finish within it. */
	timeoutMs: number;
	/** The header carrying the downstream idempotency key; null: not sent. */
	idempotencyHeader: string | null;
	/** What Reserve fingerprints: { method, url, query, body } (never headers). */
	fingerprint: unknown;
}

export interface GuardedRequestInput {
	method: unknown;
	url: unknown;
	/** [{ name, value }] (n8n's fixedCollection) or undefined. */
	headers?: unknown;
	query?: unknown;
	bodyType?: unknown;
	/** JSON value (json), [{ name, value }] (form), text (text). */
	body?: unknown;
	contentType?: unknown;
	timeoutMs: unknown;
	idempotencyHeader?: unknown;
	/** The operation's lease in seconds (checked by prepareReserveItem); must outlast the timeout. */
	leaseSeconds: number;
	/** An explicit fingerprint (the node's Options → Fingerprint); undefined: { method, url, query, body }. */
	fingerprint?: unknown;
}

function pairs(value: unknown, what: string): NameValue[] {
	if (value === undefined || value === null || value === '') return [];
	if (!Array.isArray(value)) throw new InputError(`${what} must be a list of name/value pairs`);
	return value.map((p, n) => {
		const name = typeof p?.name === 'string' ? p.name : '';
		const v = p?.value;
		if (name.trim() === '') throw new InputError(`${what}: entry ${n + 1} has no name`);
		if (v !== undefined && v !== null && typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
			throw new InputError(`${what}: "${cutText(name, 60)}" must be text, a number or true/false (got ${Array.isArray(v) ? 'a list' : typeof v})`);
		}
		return { name, value: v === undefined || v === null ? '' : String(v) };
	});
}

/** Checks a header field name (RFC 9110 token). */
function checkHeaderName(name: string, what: string): string {
	if (!TOKEN.test(name)) throw new InputError(`${what} "${cutText(name, 60)}" is not a valid header name (letters, digits and !#$%&'*+-.^_\`|~ only)`);
	return name;
}

/** Milliseconds from 1 to 600000, whole. */
export function checkTimeoutMs(value: unknown): number {
	const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_TIMEOUT_MS) {
		throw new InputError(`The timeout must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}; got ${cutText(String(value), 40)}. It is required: a request without a deadline could hold the operation for ever.`);
	}
	return n;
}

/**
 * Validates one request. Throws InputError (nothing is reserved or sent): a method not offered;
 * a URL that is not absolute http(s) or carries a user name or password (use an n8n credential);
 * a header name that is not a token or repeats another (letter case ignored); a header value with
 * a line break; a header that sets the idempotency key's header itself; a body that is not plain
 * JSON; a form field without a name; a timeout outside 1..600000 ms; a lease (seconds) that does
 * not outlast the timeout by 5 s.
 */
export function prepareGuardedRequest(input: GuardedRequestInput): GuardedRequest {
	const method = typeof input.method === 'string' ? input.method.toUpperCase() : input.method;
	if (!GUARDED_METHODS.includes(method as GuardedMethod)) throw new InputError(`The method must be one of ${GUARDED_METHODS.join(', ')}; got ${cutText(String(input.method), 40)}`);
	if (typeof input.url !== 'string' || input.url.trim() === '') throw new InputError('The URL is empty');
	let url: URL;
	try {
		url = new URL(input.url.trim());
	} catch {
		throw new InputError(`The URL "${cutText(input.url, 200)}" is not an absolute URL (e.g. https://api.example.com/v1/payments)`);
	}
	if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InputError(`The URL must start with http:// or https://; got ${cutText(url.protocol, 20)}`);
	if (url.username || url.password) throw new InputError('The URL carries a user name or password; put them in an n8n credential (Authentication) instead, where they are kept encrypted and out of the ledger');

	const timeoutMs = checkTimeoutMs(input.timeoutMs);
	if (input.leaseSeconds * 1000 < timeoutMs + LEASE_MARGIN_MS) {
		throw new InputError(
			`The lease (${input.leaseSeconds} s) must outlast the timeout (${timeoutMs} ms) by at least ${LEASE_MARGIN_MS / 1000} s, the time to record the answer: raise Lease (Seconds) or lower Timeout (ms)`,
		);
	}

	const idem = input.idempotencyHeader === undefined || input.idempotencyHeader === null ? DEFAULT_IDEMPOTENCY_HEADER : String(input.idempotencyHeader).trim();
	const idempotencyHeader = idem === '' ? null : checkHeaderName(idem, 'The idempotency key header');

	const headers: Record<string, string> = {};
	const seen = new Map<string, string>();
	for (const { name, value } of pairs(input.headers, 'Headers')) {
		checkHeaderName(name, 'The header');
		const lower = name.toLowerCase();
		if (seen.has(lower)) throw new InputError(`The header "${cutText(name, 60)}" is given twice (as "${cutText(seen.get(lower) ?? '', 60)}" too)`);
		if (idempotencyHeader && lower === idempotencyHeader.toLowerCase()) {
			throw new InputError(`The header "${cutText(name, 60)}" is the idempotency key's header: the node sets it to the ledger's key for this attempt; remove it from Headers`);
		}
		if (/[\r\n\0]/.test(value)) throw new InputError(`The header "${cutText(name, 60)}" has a line break or NUL character in its value`);
		seen.set(lower, name);
		headers[name] = value;
	}

	const query: Record<string, string | string[]> = {};
	for (const { name, value } of pairs(input.query, 'Query parameters')) {
		const had = query[name];
		query[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
	}

	const bodyType = (input.bodyType ?? 'none') as BodyType;
	if (!BODY_TYPES.includes(bodyType)) throw new InputError(`The body type must be one of ${BODY_TYPES.join(', ')}`);
	let body: unknown = null;
	let contentType: string | null = null;
	if (bodyType === 'json') {
		try {
			assertJson(input.body === undefined ? null : input.body);
		} catch (e) {
			if (e instanceof NotJsonError) throw new InputError(`The body is not plain JSON: ${e.message.replace(/^\$/, 'body')}`);
			throw e;
		}
		body = input.body === undefined ? null : input.body;
	} else if (bodyType === 'form') {
		const fields: Record<string, string | string[]> = {};
		for (const { name, value } of pairs(input.body, 'Body fields')) {
			const had = fields[name];
			fields[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
		}
		body = fields;
	} else if (bodyType === 'text') {
		if (typeof input.body !== 'string') throw new InputError('The body must be text');
		body = input.body;
		contentType = typeof input.contentType === 'string' && input.contentType.trim() !== '' ? input.contentType.trim() : 'text/plain; charset=utf-8';
		if (/[\r\n\0]/.test(contentType)) throw new InputError('The content type has a line break or NUL character');
	}
	const href = url.href;
	const fingerprint = input.fingerprint !== undefined ? input.fingerprint : { method, url: href, query, body };
	return { method: method as GuardedMethod, url: href, headers, query, bodyType, body, contentType, timeoutMs, idempotencyHeader, fingerprint };
}

/** What came back from one send: an answer (any status) or an error without one. */
export type SendOutcome =
	| { kind: 'answer'; statusCode: number; headers: Record<string, unknown>; body: unknown }
	| { kind: 'error'; error: unknown }
	| { kind: 'deadline'; timeoutMs: number }
	| { kind: 'cancelled' };

/**
 * The ledger's verdict on one send. An answer: the status table (with overrides). An error
 * without an answer: connection refused / host not found -> failed, retryable; timeouts, resets
 * and anything else -> unknown (classify.ts). The node's own total deadline (the timeout passed
 * with no complete answer) and a cancelled execution -> unknown: the request may have arrived.
 */
export function classifySend(result: SendOutcome, overrides?: StatusOverrides): Classification {
	switch (result.kind) {
		case 'answer':
			return { ...classifyStatus(result.statusCode, overrides), statusCode: result.statusCode, body: result.body };
		case 'deadline':
			return {
				outcome: 'unknown',
				retryable: false,
				reason: `No complete answer within the timeout (${result.timeoutMs} ms): the request may have reached the target`,
				statusCode: null,
				body: null,
			};
		case 'cancelled':
			return { outcome: 'unknown', retryable: false, reason: 'The execution was cancelled while the request was in flight: it may have reached the target', statusCode: null, body: null };
		case 'error':
			return classifyHttpResult({ error: errorShape(result.error) });
	}
}

/** The fields of a thrown error classify.ts reads (code, message, description, status, cause). */
function errorShape(e: unknown): unknown {
	if (typeof e !== 'object' || e === null) return String(e);
	const err = e as Record<string, unknown>;
	const pick = (x: Record<string, unknown>): Record<string, unknown> => ({
		code: x.code,
		message: x.message,
		description: x.description,
		name: x.name,
		httpCode: x.httpCode,
		status: x.status,
		cause: typeof x.cause === 'object' && x.cause !== null ? pick(x.cause as Record<string, unknown>) : undefined,
	});
	return pick(err);
}

/**
 * Parses an answer's text body: JSON when the Content-Type says JSON (application/json or
 * +json) and the text parses, otherwise the text as it came; an empty body is null.
 */
export function parseBody(text: unknown, contentType: unknown): unknown {
	if (text === undefined || text === null) return null;
	if (typeof text !== 'string') return text;
	if (text === '') return null;
	const ct = typeof contentType === 'string' ? contentType.toLowerCase() : Array.isArray(contentType) ? String(contentType[0]).toLowerCase() : '';
	if (/^application\/(?:[\w.+-]*\+)?json\b/.test(ct)) {
		try {
			return JSON.parse(text) as unknown;
		} catch {
			return text;
		}
	}
	return text;
}

/**
 * The target's reference for the write: the value at `path` (dot notation, e.g. `id` or
 * `data.payment.id`) of a JSON body, as text (numbers as their decimal text), cut to 1000
 * characters; null when the path is empty, missing or not text or number.
 */
export function referenceAt(body: unknown, path: string): string | null {
	if (!path) return null;
	let v: unknown = body;
	for (const part of path.split('.')) {
		if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
		v = (v as Record<string, unknown>)[part];
	}
	if (typeof v === 'number' && Number.isFinite(v)) return String(v);
	if (typeof v !== 'string' || v === '') return null;
	return cutText(v, TEXT_LIMITS.maxReferenceLength);
}
