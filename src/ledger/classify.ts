/**
 * Classifies the result of an HTTP call into the ledger's three outcomes by one question: could the
 * request have taken effect at the target? The answer per status code is STATUS_TABLE below (also
 * in docs/http-classification.md, with its sources); everything else:
 *   - Connection refused or host not found: failed, retryable: the request never reached the server.
 *   - Timeouts, resets, hang-ups and anything unrecognised: unknown. Never guessed as failure.
 * The table can be overridden per status code (Confirm Operation's and Reconcile Unknown's "Status
 * Code Overrides", parsed by parseStatusOverrides()).
 * Accepts the shapes n8n's HTTP Request node produces: the response body (success), the full
 * response `{ statusCode, headers, body }`, and the error item `{ error: ... }` that "On Error:
 * Continue" emits.
 */
import { InputError } from '../errors';
import type { ConfirmOutcome } from './states';
import { cutText } from '../text';

export interface Classification {
	outcome: ConfirmOutcome;
	/** For `failed`: whether a new attempt may be reserved. */
	retryable: boolean;
	/** Human-readable cause, stored with the operation (null for success). */
	reason: string | null;
	/** HTTP status code when one was found. */
	statusCode: number | null;
	/** The response body to store (for the full-response shape, its `body`). */
	body: unknown;
}

const NOT_DELIVERED = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN)\b/;
const IN_DOUBT = /\b(ETIMEDOUT|ESOCKETTIMEDOUT|ECONNRESET|ECONNABORTED|EPIPE|EHOSTUNREACH|ENETUNREACH)\b|timeout|timed out|socket hang up/i;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function toStatus(v: unknown): number | null {
	const n = typeof v === 'string' && /^\d{3}$/.test(v.trim()) ? Number(v) : v;
	return typeof n === 'number' && Number.isInteger(n) && n >= 100 && n <= 599 ? n : null;
}

/** One row of the classification table. */
export interface StatusRule {
	outcome: ConfirmOutcome;
	/** For `failed`: may a new attempt be reserved (the same request can succeed later)? */
	retryable: boolean;
	/** Why, with the source. */
	why: string;
}

/** The kind of answer an override may choose. */
export type StatusVerdict = 'succeeded' | 'failed' | 'failed_retryable' | 'unknown';

/**
 * Status codes with their own rule. Sources: RFC 9110 (HTTP Semantics) §15, RFC 6585 (428, 429,
 * 431), RFC 8470 (425), RFC 4918 (423), RFC 7725 (451), draft-ietf-httpapi-idempotency-key-header
 * (409 while a request with the same key is in flight).
 */
export const STATUS_TABLE: Readonly<Record<number, StatusRule>> = {
	400: { outcome: 'failed', retryable: false, why: 'Bad Request: refused as malformed before processing (RFC 9110 §15.5.1)' },
	401: { outcome: 'failed', retryable: true, why: 'Unauthorized: refused before processing; succeeds after a credential fix (RFC 9110 §15.5.2)' },
	402: { outcome: 'failed', retryable: false, why: 'Payment Required: refused (RFC 9110 §15.5.3; e.g. a declined card)' },
	403: { outcome: 'failed', retryable: true, why: 'Forbidden: refused before processing; may succeed after a permission fix (RFC 9110 §15.5.4)' },
	404: { outcome: 'failed', retryable: false, why: 'Not Found: no target resource to act on (RFC 9110 §15.5.5)' },
	405: { outcome: 'failed', retryable: false, why: 'Method Not Allowed (RFC 9110 §15.5.6)' },
	408: { outcome: 'unknown', retryable: false, why: 'Request Timeout: the connection was closed mid-request; whether a proxy or the origin acted on it is not known (RFC 9110 §15.5.9)' },
	409: { outcome: 'unknown', retryable: false, why: 'Conflict: often a request with the same Idempotency-Key still in flight (RFC 9110 §15.5.10, draft-ietf-httpapi-idempotency-key-header)' },
	410: { outcome: 'failed', retryable: false, why: 'Gone (RFC 9110 §15.5.11)' },
	412: { outcome: 'failed', retryable: false, why: 'Precondition Failed: the condition was false, nothing applied (RFC 9110 §15.5.13)' },
	413: { outcome: 'failed', retryable: false, why: 'Content Too Large (RFC 9110 §15.5.14)' },
	415: { outcome: 'failed', retryable: false, why: 'Unsupported Media Type (RFC 9110 §15.5.16)' },
	422: { outcome: 'failed', retryable: false, why: 'Unprocessable Content: refused as it stands (RFC 9110 §15.5.21)' },
	423: { outcome: 'failed', retryable: true, why: 'Locked: not applied; may succeed once the lock is gone (RFC 4918 §11.3)' },
	425: { outcome: 'failed', retryable: true, why: 'Too Early: the server refused to process a request that might be replayed (RFC 8470 §5.2)' },
	428: { outcome: 'failed', retryable: false, why: 'Precondition Required (RFC 6585 §3)' },
	429: { outcome: 'failed', retryable: true, why: 'Too Many Requests: rate limited, not processed; retry after a pause (RFC 6585 §4)' },
	431: { outcome: 'failed', retryable: false, why: 'Request Header Fields Too Large (RFC 6585 §5)' },
	451: { outcome: 'failed', retryable: false, why: 'Unavailable For Legal Reasons (RFC 7725)' },
};

/** The rule for a status code: the table, then by class (2xx, other 4xx, 5xx, anything else). */
export function statusRule(status: number): StatusRule {
	const row = STATUS_TABLE[status];
	if (row) return row;
	if (status >= 200 && status < 300) return { outcome: 'succeeded', retryable: false, why: 'Successful (RFC 9110 §15.3)' };
	if (status >= 400 && status < 500) return { outcome: 'failed', retryable: false, why: 'Client error: the request was refused as it stands (RFC 9110 §15.5)' };
	if (status >= 500 && status < 600) return { outcome: 'unknown', retryable: false, why: 'Server error: the server may have acted before failing (RFC 9110 §15.6)' };
	return { outcome: 'unknown', retryable: false, why: 'Not a final answer, or a redirect that was not followed (RFC 9110 §15.2, §15.4)' };
}

/** Overrides per status code, from parseStatusOverrides(). */
export type StatusOverrides = ReadonlyMap<number, StatusVerdict>;

/**
 * Parses "Status Code Overrides": comma- or line-separated `code=verdict` pairs, e.g.
 * `409=failed, 402=failed_retryable, 503=unknown`. Verdicts: succeeded, failed (not retryable),
 * failed_retryable, unknown. Throws InputError naming the bad pair (nothing is written).
 */
export function parseStatusOverrides(text: unknown, verdicts: readonly string[] = ['succeeded', 'failed', 'failed_retryable', 'unknown']): Map<number, string> {
	const out = new Map<number, string>();
	if (text === undefined || text === null || text === '') return out;
	if (typeof text !== 'string') throw new InputError('Status code overrides must be text such as "409=failed, 429=unknown"');
	for (const raw of text.split(/[,\n]/)) {
		const pair = raw.trim();
		if (!pair) continue;
		const m = /^(\d{3})\s*[=:]\s*([a-z_]+)$/i.exec(pair);
		const code = m ? Number(m[1]) : NaN;
		if (!m || code < 100 || code > 599 || !verdicts.includes(m[2].toLowerCase())) {
			throw new InputError(`Status code override "${cutText(pair, 60)}" is not "<100..599>=<${verdicts.join('|')}>"`);
		}
		out.set(code, m[2].toLowerCase());
	}
	return out;
}

/** Classifies a status code alone (the table, unless `overrides` names the code). */
export function classifyStatus(status: number, overrides?: StatusOverrides): Pick<Classification, 'outcome' | 'retryable' | 'reason'> {
	const o = overrides?.get(status);
	if (o) {
		const outcome: ConfirmOutcome = o === 'failed_retryable' ? 'failed' : o;
		return {
			outcome,
			retryable: o === 'failed_retryable',
			reason: outcome === 'succeeded' ? null : `HTTP ${status}: ${o.replace('_', ', ')} (status code override)`,
		};
	}
	const r = statusRule(status);
	if (r.outcome === 'succeeded') return { outcome: 'succeeded', retryable: false, reason: null };
	const what = r.outcome === 'unknown' ? 'the outcome at the target is not known' : r.retryable ? 'the target refused the request; it may succeed later' : 'the target refused the request';
	return { outcome: r.outcome, retryable: r.retryable, reason: `HTTP ${status}: ${what} (${r.why})` };
}

function findErrorStatus(err: Obj): number | null {
	const candidates: unknown[] = [err.httpCode, err.statusCode, err.status];
	for (const nested of [err.response, err.cause, err.context]) {
		if (isObj(nested)) candidates.push(nested.status, nested.statusCode, nested.httpCode);
	}
	for (const c of candidates) {
		const s = toStatus(c);
		if (s) return s;
	}
	const m = typeof err.message === 'string' ? /^(\d{3})\s*[-:]/.exec(err.message) : null;
	return m ? toStatus(m[1]) : null;
}

/**
 * The error's words for a reason text: code, message, description and name of the error and of
 * its causes, each distinct text once (the HTTP Request node repeats its cause's code and message
 * on the outer error), and without the generic name "Error".
 */
function errorText(err: unknown): string {
	if (typeof err === 'string') return err;
	if (!isObj(err)) return String(err);
	const bits: string[] = [];
	const seen = new Set<Obj>();
	for (let e: unknown = err; isObj(e) && !seen.has(e); e = e.cause) {
		seen.add(e);
		for (const k of ['code', 'message', 'description', 'name']) {
			const v = e[k];
			if (typeof v !== 'string' || v.trim() === '' || (k === 'name' && v === 'Error')) continue;
			if (!bits.includes(v)) bits.push(v);
		}
	}
	return bits.join(' ');
}

/** Classifies one HTTP Request node output item's JSON. */
export function classifyHttpResult(json: Obj, overrides?: StatusOverrides): Classification {
	if ('error' in json && json.error !== undefined && json.error !== null) {
		const err = json.error;
		const status = isObj(err) ? findErrorStatus(err) : toStatus(/^(\d{3})\b/.exec(String(err))?.[1]);
		const text = cutText(errorText(err), 500);
		if (status) {
			const c = classifyStatus(status, overrides);
			return { ...c, reason: `${c.reason}${text ? ` (${text})` : ''}`, statusCode: status, body: null };
		}
		if (NOT_DELIVERED.test(text)) {
			return { outcome: 'failed', retryable: true, reason: `Not delivered: ${text}`, statusCode: null, body: null };
		}
		const why = IN_DOUBT.test(text) ? 'The request may have reached the target' : 'Unrecognised error';
		return { outcome: 'unknown', retryable: false, reason: `${why}: ${text || 'no details'}`, statusCode: null, body: null };
	}
	const status = toStatus(json.statusCode);
	if (status !== null && 'body' in json) {
		return { ...classifyStatus(status, overrides), statusCode: status, body: json.body };
	}
	// The HTTP Request node emits the bare body only for 2xx answers (unless "Never Error" is on,
	// in which case switch on "Include Response Headers and Status" so the status is visible).
	return { outcome: 'succeeded', retryable: false, reason: null, statusCode: null, body: json };
}
