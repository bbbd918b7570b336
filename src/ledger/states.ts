/**
 * The ledger's facts, each named once: its states, the outcomes its functions answer with, and the
 * output each outcome leaves a node by (label and order; nodes/ derive their outputs from these).
 * The state machine itself is drawn in schema/migrations/0001_ledger.sql and followed literally by
 * its functions. Each closed list is written here once and the rest of src/ and nodes/ derive from
 * it (types as `(typeof X)[number]`); test/integration/states.test.ts checks OPERATION_STATUSES
 * against the CHECK constraint on operations.status, and every outcome list against the literals
 * the SQL function that answers with it can return.
 */
import { storableText } from '../text';

export const OPERATION_STATUSES = ['reserved', 'succeeded', 'failed', 'unknown', 'review'] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/**
 * What Reserve (reserve_operations) answers per item: a decision, which leaves Reserve Operation by
 * an output of its own (in this order: RESERVE_OUTPUTS), or `busy`: the key's row stayed locked by
 * another transaction for longer than the lock timeout, nothing was changed for the item (it leaves
 * by Unrecorded, retryable).
 */
export const RESERVE_OUTCOMES = [
	'proceed',
	'already_succeeded',
	'in_progress',
	'needs_reconcile',
	'conflict',
	'failed_permanently',
	'busy',
] as const;
export type ReserveOutcome = (typeof RESERVE_OUTCOMES)[number];
/** The outcomes the ledger decided: every Reserve outcome but `busy`, in output order. */
export type ReserveDecision = Exclude<ReserveOutcome, 'busy'>;
export const RESERVE_OUTPUTS = RESERVE_OUTCOMES.filter((o): o is ReserveDecision => o !== 'busy');

/** What a caller reports to Confirm. */
export const CONFIRM_OUTCOMES = ['succeeded', 'failed', 'unknown'] as const;
export type ConfirmOutcome = (typeof CONFIRM_OUTCOMES)[number];
/** True for one of CONFIRM_OUTCOMES. */
export function isConfirmOutcome(value: unknown): value is ConfirmOutcome {
	return (CONFIRM_OUTCOMES as readonly unknown[]).includes(value);
}

/** How Confirm (confirm_operations) treated a report. */
export const CONFIRM_RESULTS = ['recorded', 'repeated', 'stale', 'not_found', 'busy'] as const;
export type ConfirmResult = (typeof CONFIRM_RESULTS)[number];

/** How Reconcile Unknown's Resolve (reconcile_resolve) applied a resolution. */
export const RESOLVE_RESULTS = ['succeeded', 'failed', 'unknown', 'review', 'claim_lost', 'not_found', 'refused_early', 'busy'] as const;
export type ResolveResult = (typeof RESOLVE_RESULTS)[number];

/**
 * How Settle by Hand (ops_settle_by_hand) treated a request: settled (this call decided), refused
 * (already settled), refused_early ("not_happened" while the settle window runs, without the
 * override; nothing changed), not_found.
 */
export const SETTLE_BY_HAND_RESULTS = ['settled', 'refused', 'refused_early', 'not_found'] as const;
export type SettleByHandResult = (typeof SETTLE_BY_HAND_RESULTS)[number];

/** Reserve Operation's outputs after Unrecorded, one per decision, in the order of RESERVE_OUTPUTS. */
export const RESERVE_OUTPUT_LABELS: Readonly<Record<ReserveDecision, string>> = {
	proceed: 'Proceed',
	already_succeeded: 'Done Before',
	in_progress: 'In Progress',
	needs_reconcile: 'Reconcile',
	conflict: 'Conflict',
	failed_permanently: 'Failed Before',
};

/**
 * Confirm Operation's outputs, in order: the status a recorded (or repeated) report left, or
 * `stale` for a report the lease no longer allowed (nothing recorded), then `review`: a success
 * reported by another execution than the one the lease was granted to (n8n re-ran the write from a
 * stored Proceed item), recorded as status review and flagged as a possible duplicate.
 */
export const CONFIRM_OUTPUTS = ['succeeded', 'failed', 'unknown', 'stale', 'review'] as const;
export type ConfirmOutput = (typeof CONFIRM_OUTPUTS)[number];
export const CONFIRM_OUTPUT_LABELS: Readonly<Record<ConfirmOutput, string>> = {
	succeeded: 'Succeeded',
	failed: 'Failed',
	unknown: 'Unknown',
	stale: 'Stale',
	review: 'To Review',
};

/**
 * Guarded HTTP Request's outputs after Unrecorded, in order. Sent in this run (the node reserved,
 * sent and recorded it): succeeded, failed, unknown. Not sent (Reserve's answers): already
 * succeeded, in progress, needs reconcile, conflict, failed permanently. Then `review`: sent, but
 * the answer could not be recorded as this lease's (the lease was lost while the request ran:
 * a stale report, possibly a duplicate).
 */
export const GUARDED_OUTPUTS = [
	'succeeded',
	'failed',
	'unknown',
	'already_succeeded',
	'in_progress',
	'needs_reconcile',
	'conflict',
	'failed_permanently',
	'review',
] as const;
export type GuardedOutput = (typeof GUARDED_OUTPUTS)[number];
export const GUARDED_OUTPUT_LABELS: Readonly<Record<GuardedOutput, string>> = {
	succeeded: 'Succeeded',
	failed: 'Failed',
	unknown: 'Unknown',
	already_succeeded: RESERVE_OUTPUT_LABELS.already_succeeded,
	in_progress: RESERVE_OUTPUT_LABELS.in_progress,
	needs_reconcile: RESERVE_OUTPUT_LABELS.needs_reconcile,
	conflict: RESERVE_OUTPUT_LABELS.conflict,
	failed_permanently: RESERVE_OUTPUT_LABELS.failed_permanently,
	review: 'To Review',
};

/** Reconcile Unknown (Claim)'s one output after Unrecorded. */
export const CLAIM_OUTPUT_LABEL = 'To Check';

/**
 * Reconcile Unknown (Resolve)'s outputs, in order: the status the resolution left (succeeded =
 * happened, failed = did not happen, unknown, review) or `claim_lost` (nothing recorded).
 */
export const RESOLVE_OUTPUTS = ['succeeded', 'failed', 'unknown', 'review', 'claim_lost'] as const;
export type ResolveOutput = (typeof RESOLVE_OUTPUTS)[number];
export const RESOLVE_OUTPUT_LABELS: Readonly<Record<ResolveOutput, string>> = {
	succeeded: 'Succeeded',
	failed: 'Failed',
	unknown: 'Unknown',
	review: 'To Review',
	claim_lost: 'Claim Lost',
};

/**
 * Operation Ledger Admin's outputs after Unrecorded: Result (Get, List, Health, Compact, Hard
 * Delete), then Settle by Hand's two, in order: Settled (the database settled it in this run: the
 * go-ahead) and Refused (already decided; nothing written).
 */
export const ADMIN_RESULT_LABEL = 'Result';
export const SETTLE_OUTPUTS = ['settled', 'refused'] as const;
export type SettleOutput = (typeof SETTLE_OUTPUTS)[number];
export const SETTLE_OUTPUT_LABELS: Readonly<Record<SettleOutput, string>> = {
	settled: 'Settled',
	refused: 'Refused',
};

/** Labels in output order, e.g. outputLabels(RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS). */
export function outputLabels<K extends string>(order: readonly K[], labels: Readonly<Record<K, string>>): string[] {
	return order.map((k) => labels[k]);
}

/**
 * Context recorded on every event: which execution, workflow and node caused it. `executionId` is
 * also what Reserve records as the lease's execution and what Confirm compares it with (a report
 * from another execution is a possible duplicate; schema/functions/ledger/confirm_operations.sql).
 * `executionMode` (n8n's mode: trigger, webhook, manual, retry, ...) is recorded in those events.
 */
export interface EventContext {
	executionId?: string;
	workflowId?: string;
	nodeName?: string;
	executionMode?: string;
}

/**
 * The JSON text of `ctx` as the SQL functions read it (p_ctx): each value made storable (NUL and
 * lone surrogates become U+FFFD, at most 1000 UTF-16 units: src/text.ts storableText), so a node
 * name Postgres could not store never fails a batch. Non-string values are left out.
 */
export function eventContextJson(ctx: EventContext = {}): string {
	const out: Record<string, string> = {};
	for (const k of ['executionId', 'workflowId', 'nodeName', 'executionMode'] as const) {
		const v = ctx[k];
		if (typeof v === 'string') out[k] = storableText(v, 1000);
	}
	return JSON.stringify(out);
}

/** Converts a pg timestamptz to ISO-8601 (src/db/values.ts, shared with the queue). */
export { iso } from '../db/values';
