/**
 * Reconcile Unknown → Claim: take operations whose outcome is unknown and whose settle window has
 * ended, for a lookup at the target, in one round trip to schema/functions/ledger/reconcile_claim.sql.
 * The claim token keeps other reconcilers away until it expires.
 */
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { boundedQuery, type Bounds } from '../../db/bounds';
import type { Queryable } from '../../db/values';
import { eventContextJson, iso, type EventContext } from '../states';
import { LIMITS, TEXT_LIMITS } from '../../limits';
import { checkOptionalKeyText } from '../validate';
import { checkWholeNumber } from '../wholeNumber';

export interface ClaimOptions {
	/** Most operations to claim (LIMITS.reconcileBatchSize). */
	limit: number;
	/**
	 * Extra seconds on top of each operation's own settle window (stored by Reserve) before it is
	 * checked; 0 by default.
	 */
	settleSeconds: number;
	/** Seconds the claim keeps other reconcilers away (LIMITS.reconcileClaimSeconds). */
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

/** Validates claim options. Throws InputError. */
export function checkClaimOptions(o: { limit: unknown; settleSeconds?: unknown; claimSeconds: unknown; target?: unknown }): ClaimOptions {
	return {
		limit: checkWholeNumber(o.limit, 'The batch size', LIMITS.reconcileBatchSize),
		settleSeconds: checkWholeNumber(o.settleSeconds ?? LIMITS.reconcileSettleDelaySeconds.default, 'The extra settle delay (seconds)', LIMITS.reconcileSettleDelaySeconds),
		claimSeconds: checkWholeNumber(o.claimSeconds, 'The claim duration (seconds)', LIMITS.reconcileClaimSeconds),
		target: checkOptionalKeyText(o.target, 'The target', TEXT_LIMITS.maxTargetLength),
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
export async function claimUnknown(db: Queryable, schema: LedgerSchema, o: ClaimOptions, ctx: EventContext = {}, bounds?: Bounds): Promise<ClaimedOperation[]> {
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
