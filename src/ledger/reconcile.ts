/**
 * Reconcile Unknown: claim operations whose outcome is unknown, and resolve them from what the
 * target system says. Never turns "unknown" into "safe to retry" without evidence: see
 * schema/functions/ledger/reconcile_claim.sql and reconcile_resolve.sql for the rules.
 */
import { resultsByItem } from './rows';
import { sqlFunction } from '../db/identifiers';
import { isUuid } from '../check';
import { InputError } from '../errors';
import { canonicalJson, NotJsonError } from '../json/canonical';
import { cutAny, cutText, storableText } from '../text';
import type { Queryable } from '../db/values';
import { boundedQuery, type Bounds } from '../db/bounds';
import { eventContextJson, LIMITS, iso, type EventContext, type OperationStatus, type ResolveResult } from './states';
import { checkOperationKey, checkOptionalText, checkOptionalKeyText } from './validate';

/** What a lookup at the target reported. */
export const RECONCILE_RESOLUTIONS = ['happened', 'not_happened', 'still_unknown'] as const;
export type ReconcileResolution = (typeof RECONCILE_RESOLUTIONS)[number];

/** How a resolution was applied (RESOLVE_RESULTS, src/ledger/states.ts). */
export type ReconcileResult = ResolveResult;

export interface ClaimOptions {
	/** Most operations to claim (1..1000). */
	limit: number;
	/**
	 * Extra seconds on top of each operation's own settle window (stored by Reserve) before it is
	 * checked; 0 by default.
	 */
	settleSeconds: number;
	/** Seconds the claim keeps other reconcilers away (1..86400). */
	claimSeconds: number;
	/** Only operations for this target; null for all. */
	target: string | null;
}

/** One claimed operation: what a lookup at the target needs. Timestamps are ISO-8601. */
export interface ClaimedOperation {
	operationKey: string;
	target: string | null;
	/** The Idempotency-Key the write was sent with: look the write up by it. */
	idempotencyKey: string;
	request: unknown;
	attempt: number;
	reason: string | null;
	unknownSince: string | null;
	/** Checks made before this one. */
	checks: number;
	claimToken: string;
	claimExpiresAt: string | null;
}

function checkInt(value: unknown, what: string, min: number, max: number): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
		throw new InputError(`${what} must be a whole number from ${min} to ${max}; got ${cutAny(value, 40)}`);
	}
	return n;
}

/** Validates claim options. Throws InputError. */
export function checkClaimOptions(o: { limit: unknown; settleSeconds?: unknown; claimSeconds: unknown; target?: unknown }): ClaimOptions {
	return {
		limit: checkInt(o.limit, 'The batch size', 1, 1000),
		settleSeconds: checkInt(o.settleSeconds ?? 0, 'The extra settle delay (seconds)', 0, 30 * 86400),
		claimSeconds: checkInt(o.claimSeconds, 'The claim duration (seconds)', 1, 86400),
		target: checkOptionalKeyText(o.target, 'The target', LIMITS.maxTargetLength),
	};
}

interface ClaimRow {
	operation_key: string;
	target: string | null;
	idempotency_key: string;
	request: unknown;
	attempt: number;
	reason: string | null;
	unknown_since: Date | null;
	reconcile_checks: number;
	claim_token: string;
	claim_expires_at: Date | null;
}

/** Claims due operations (one round trip). Oldest first. */
export async function claimUnknown(db: Queryable, schema: string, o: ClaimOptions, ctx: EventContext = {}, bounds?: Bounds): Promise<ClaimedOperation[]> {
	const rows = await boundedQuery<ClaimRow>(db, `SELECT * FROM ${sqlFunction(schema, 'reconcile_claim')}($1, $2, $3, $4, $5::jsonb)`, [
		o.limit,
		o.settleSeconds,
		o.claimSeconds,
		o.target,
		eventContextJson(ctx),
	], bounds, { repeatSafe: true });
	return rows
		.map((r) => ({
			operationKey: r.operation_key,
			target: r.target,
			idempotencyKey: r.idempotency_key,
			request: r.request,
			attempt: r.attempt,
			reason: r.reason,
			unknownSince: iso(r.unknown_since),
			checks: r.reconcile_checks,
			claimToken: r.claim_token,
			claimExpiresAt: iso(r.claim_expires_at),
		}))
		.sort((a, b) => (a.unknownSince ?? '').localeCompare(b.unknownSince ?? '') || a.operationKey.localeCompare(b.operationKey));
}

export interface ResolveItem {
	index: number;
	operationKey: string;
	claimToken: string;
	resolution: ReconcileResolution;
	externalRef: string | null;
	responseJson: string;
	reason: string | null;
}


/** Validates one resolution. Throws InputError before anything is written. */
export function prepareResolveItem(
	index: number,
	input: { operationKey: unknown; claimToken: unknown; resolution: unknown; externalRef?: unknown; response?: unknown; reason?: unknown },
): ResolveItem {
	const operationKey = checkOperationKey(input.operationKey);
	if (!isUuid(input.claimToken)) {
		throw new InputError('No valid claim token: only items that came out of Reconcile Unknown (Claim) can be resolved');
	}
	const resolution = input.resolution;
	if (!RECONCILE_RESOLUTIONS.includes(resolution as ReconcileResolution)) {
		throw new InputError(`The resolution must be happened, not_happened or still_unknown; got ${cutAny(JSON.stringify(resolution), 40)}`);
	}
	const externalRef = checkOptionalText(input.externalRef, 'The external reference', LIMITS.maxReferenceLength);
	if (resolution === 'happened' && externalRef === null) {
		throw new InputError('"Happened" needs the target\'s reference for the write (e.g. the payment ID), as evidence');
	}
	let responseJson = 'null';
	try {
		responseJson = canonicalJson(input.response === undefined ? null : input.response);
	} catch (e) {
		if (e instanceof NotJsonError) throw new InputError(`The lookup response cannot be stored: ${e.message.replace(/^\$/, 'response')}`);
		throw e;
	}
	if (Buffer.byteLength(responseJson, 'utf8') > 256 * 1024) responseJson = JSON.stringify({ truncated: true, preview: cutText(responseJson, 1024) });
	// Diagnostic text, cut anyway: made storable (NUL, lone surrogates: U+FFFD) instead of failing the resolution.
	const reason = checkOptionalText(typeof input.reason === 'string' ? storableText(input.reason, 2000) : input.reason, 'The reason', 2000);
	return { index, operationKey, claimToken: input.claimToken.toLowerCase(), resolution: resolution as ReconcileResolution, externalRef, responseJson, reason };
}

export interface ResolveOptions {
	/** Checks after which a still-unknown operation goes to review (1..1000). */
	maxChecks: number;
	/** First backoff in seconds; doubles per check. */
	backoffBaseSeconds: number;
	/** Backoff ceiling in seconds. */
	backoffMaxSeconds: number;
}

export interface ResolveResultRow {
	index: number;
	result: ReconcileResult;
	status: OperationStatus | null;
	attempt: number | null;
	externalRef: string | null;
	checks: number | null;
	nextCheckAt: string | null;
}

/** Validates resolve options. Throws InputError. */
export function checkResolveOptions(o: { maxChecks: unknown; backoffBaseSeconds: unknown; backoffMaxSeconds: unknown }): ResolveOptions {
	const maxChecks = checkInt(o.maxChecks, 'Max checks', 1, 1000);
	const backoffBaseSeconds = checkInt(o.backoffBaseSeconds, 'The backoff base (seconds)', 1, 86400);
	const backoffMaxSeconds = checkInt(o.backoffMaxSeconds, 'The backoff ceiling (seconds)', 1, 30 * 86400);
	if (backoffMaxSeconds < backoffBaseSeconds) throw new InputError('The backoff ceiling must not be below the backoff base');
	return { maxChecks, backoffBaseSeconds, backoffMaxSeconds };
}

/** Applies resolutions in one round trip and one transaction; one result per item, in order. */
export async function resolveUnknown(
	db: Queryable,
	schema: string,
	items: ResolveItem[],
	o: ResolveOptions,
	ctx: EventContext = {},
	bounds?: Bounds,
): Promise<ResolveResultRow[]> {
	if (items.length === 0) return [];
	const doc = `[${items
		.map(
			(it) =>
				`{"i":${it.index},"k":${JSON.stringify(it.operationKey)},"claim":"${it.claimToken}","r":"${it.resolution}",` +
				`"ref":${it.externalRef === null ? 'null' : JSON.stringify(it.externalRef)},` +
				`"reason":${it.reason === null ? 'null' : JSON.stringify(it.reason)},"resp":${it.responseJson}}`,
		)
		.join(',')}]`;
	const rows = await boundedQuery<{
		idx: number;
		result: ReconcileResult;
		status: OperationStatus | null;
		attempt: number | null;
		external_ref: string | null;
		reconcile_checks: number | null;
		next_check_at: Date | null;
	}>(db, `SELECT * FROM ${sqlFunction(schema, 'reconcile_resolve')}($1::jsonb, $2, $3, $4, $5::jsonb)`, [
		doc,
		o.maxChecks,
		o.backoffBaseSeconds,
		o.backoffMaxSeconds,
		eventContextJson(ctx),
	], bounds, { repeatSafe: true });
	return resultsByItem('reconcile_resolve', items, rows, (r) => ({
		checks: r.reconcile_checks,
		nextCheckAt: iso(r.next_check_at),
	}));
}

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
