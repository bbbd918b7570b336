/**
 * Reconcile Unknown → Resolve: apply what a lookup at the target said about claimed operations, in
 * one round trip and one transaction (schema/functions/ledger/reconcile_resolve.sql holds the rules).
 * "Unknown" never turns into "safe to retry" without evidence: "happened" needs the target's
 * reference, and "not happened" is refused while the operation's settle window runs.
 */
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { boundedQuery, type Bounds } from '../../db/bounds';
import type { Queryable } from '../../db/values';
import { isUuid } from '../../check';
import { InputError } from '../../errors';
import { canonicalJson, NotJsonError } from '../../json/canonical';
import { cutAny, cutText, storableText } from '../../text';
import { resultsByItem } from '../rows';
import { TEXT_LIMITS, LIMITS } from '../../limits';
import { eventContextJson, iso, type EventContext, type OperationStatus, type ResolveResult } from '../states';
import { checkOperationKey, checkOptionalText } from '../validate';
import { checkWholeNumber } from '../wholeNumber';
import { RECONCILE_RESOLUTIONS, type ReconcileResolution } from './lookup';

/** How a resolution was applied (RESOLVE_RESULTS, src/ledger/states.ts). */
export type ReconcileResult = ResolveResult;

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
	const externalRef = checkOptionalText(input.externalRef, 'The external reference', TEXT_LIMITS.maxReferenceLength);
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
	/** Checks after which a still-unknown operation goes to review (LIMITS.resolveMaxChecks). */
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
	const maxChecks = checkWholeNumber(o.maxChecks, 'Max checks', LIMITS.resolveMaxChecks);
	const backoffBaseSeconds = checkWholeNumber(o.backoffBaseSeconds, 'The backoff base (seconds)', LIMITS.resolveBackoffBaseSeconds);
	const backoffMaxSeconds = checkWholeNumber(o.backoffMaxSeconds, 'The backoff ceiling (seconds)', LIMITS.resolveBackoffMaxSeconds);
	if (backoffMaxSeconds < backoffBaseSeconds) throw new InputError('The backoff ceiling must not be below the backoff base');
	return { maxChecks, backoffBaseSeconds, backoffMaxSeconds };
}

/** Applies resolutions in one round trip and one transaction; one result per item, in order. */
export async function resolveUnknown(
	db: Queryable,
	schema: LedgerSchema,
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
