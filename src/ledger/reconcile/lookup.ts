/**
 * Reconcile Unknown's reading of a lookup at the target: the three resolutions, and how the HTTP
 * Request node's answer maps onto them (pure; no database). Resolve (./resolve.ts) applies them.
 */
import { cutText } from '../../text';

/** What a lookup at the target reported. */
export const RECONCILE_RESOLUTIONS = ['happened', 'not_happened', 'still_unknown'] as const;
export type ReconcileResolution = (typeof RECONCILE_RESOLUTIONS)[number];

/**
 * Reads a lookup made with the HTTP Request node (by idempotency key) as a resolution:
 * 2xx with a reference → happened; 404 or 410 → not happened; anything else → still unknown.
 * `overrides` (parseStatusOverrides with RECONCILE_RESOLUTIONS) replaces that answer per status code;
 * "happened" still needs a reference.
 */
export function classifyLookup(
	json: Record<string, unknown>,
	reference: unknown,
	overrides?: ReadonlyMap<number, string>,
): { resolution: ReconcileResolution; reason: string | null; body: unknown } {
	const r = classifyLookupDefault(json, reference);
	const status = lookupStatus(json);
	const o = status === null ? undefined : overrides?.get(status);
	if (!o || o === r.resolution) return r;
	const noRef = reference === undefined || reference === null || reference === '';
	if (o === 'happened' && noRef) return { resolution: 'still_unknown', reason: `lookup answered HTTP ${status} (override: happened) without a reference for the write`, body: r.body };
	return { resolution: o as ReconcileResolution, reason: o === 'happened' ? null : `lookup answered HTTP ${status} (status code override: ${o})`, body: o === 'happened' ? (r.body ?? json.body ?? json) : null };
}

function lookupStatus(json: Record<string, unknown>): number | null {
	const err = json.error as Record<string, unknown> | string | undefined;
	const statusOf = (v: unknown) => {
		const n = typeof v === 'string' ? Number(v) : v;
		return typeof n === 'number' && Number.isInteger(n) ? n : null;
	};
	if (err !== undefined && err !== null) {
		let s: number | null = null;
		if (typeof err === 'object') s = statusOf(err.httpCode) ?? statusOf(err.status) ?? statusOf(err.statusCode);
		return s ?? statusOf(/^(\d{3})\b/.exec(typeof err === 'string' ? err : String(err.message ?? ''))?.[1]);
	}
	return statusOf(json.statusCode);
}

function classifyLookupDefault(json: Record<string, unknown>, reference: unknown): { resolution: ReconcileResolution; reason: string | null; body: unknown } {
	const err = json.error as Record<string, unknown> | string | undefined;
	const statusOf = (v: unknown) => {
		const n = typeof v === 'string' ? Number(v) : v;
		return typeof n === 'number' && Number.isInteger(n) ? n : null;
	};
	let status: number | null = null;
	if (err !== undefined && err !== null) {
		if (typeof err === 'object') status = statusOf(err.httpCode) ?? statusOf(err.status) ?? statusOf(err.statusCode);
		if (status === null) status = statusOf(/^(\d{3})\b/.exec(typeof err === 'string' ? err : String(err.message ?? ''))?.[1]);
		if (status === 404 || status === 410) return { resolution: 'not_happened', reason: `lookup answered HTTP ${status}: no such write`, body: null };
		const text = typeof err === 'string' ? err : String(err.message ?? 'lookup failed');
		return { resolution: 'still_unknown', reason: `lookup failed: ${cutText(text, 300)}`, body: null };
	}
	status = statusOf(json.statusCode);
	const body = status !== null && 'body' in json ? json.body : json;
	if (status === 404 || status === 410) return { resolution: 'not_happened', reason: `lookup answered HTTP ${status}: no such write`, body: null };
	if (status !== null && (status < 200 || status >= 300)) return { resolution: 'still_unknown', reason: `lookup answered HTTP ${status}`, body: null };
	if (reference === undefined || reference === null || reference === '') {
		return { resolution: 'still_unknown', reason: 'lookup answered without a reference for the write', body };
	}
	return { resolution: 'happened', reason: null, body };
}
