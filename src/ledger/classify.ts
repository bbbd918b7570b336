/**
 * Classifies the result of an HTTP call into the ledger's three outcomes. The rule:
 *   - 2xx: succeeded.
 *   - 408, 409, 425, 429 and every 5xx: unknown. The server may have committed the write before
 *     answering (a 504 from a proxy, a 500 after the commit), or is still processing it (409 with
 *     an idempotency key in flight, RFC 9110 and draft-ietf-httpapi-idempotency-key-header).
 *   - Other 4xx: failed, not retryable: the request was refused as it stands (RFC 9110 §15.5).
 *   - Connection refused or host not found: failed, retryable: the request never reached the server.
 *   - Timeouts, resets, hang-ups and anything unrecognised: unknown. Never guessed as failure.
 * Accepts the shapes n8n's HTTP Request node produces: the response body (success), the full
 * response `{ statusCode, headers, body }`, and the error item `{ error: ... }` that "On Error:
 * Continue" emits.
 */
import type { ConfirmOutcome } from './states';

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

/** Classifies a status code alone. */
export function classifyStatus(status: number): Pick<Classification, 'outcome' | 'retryable' | 'reason'> {
	if (status >= 200 && status < 300) return { outcome: 'succeeded', retryable: false, reason: null };
	if (status === 408 || status === 409 || status === 425 || status === 429 || status >= 500) {
		return { outcome: 'unknown', retryable: false, reason: `HTTP ${status}: the outcome at the target is not known` };
	}
	if (status >= 400) return { outcome: 'failed', retryable: false, reason: `HTTP ${status}: the target refused the request` };
	return { outcome: 'unknown', retryable: false, reason: `HTTP ${status}: not a final answer` };
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

function errorText(err: unknown): string {
	if (typeof err === 'string') return err;
	if (!isObj(err)) return String(err);
	const bits: string[] = [];
	for (const k of ['code', 'message', 'description', 'name']) if (typeof err[k] === 'string') bits.push(err[k] as string);
	if (isObj(err.cause)) bits.push(errorText(err.cause));
	return bits.join(' ');
}

/** Classifies one HTTP Request node output item's JSON. */
export function classifyHttpResult(json: Obj): Classification {
	if ('error' in json && json.error !== undefined && json.error !== null) {
		const err = json.error;
		const status = isObj(err) ? findErrorStatus(err) : toStatus(/^(\d{3})\b/.exec(String(err))?.[1]);
		const text = errorText(err).slice(0, 500);
		if (status) {
			const c = classifyStatus(status);
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
		return { ...classifyStatus(status), statusCode: status, body: json.body };
	}
	// The HTTP Request node emits the bare body only for 2xx answers (unless "Never Error" is on,
	// in which case switch on "Include Response Headers and Status" so the status is visible).
	return { outcome: 'succeeded', retryable: false, reason: null, statusCode: null, body: json };
}
