/**
 * The ledger's facts, each named once: its states, the outcomes its functions answer with, and the
 * output each outcome leaves a node by (label and order; nodes/ derive their outputs from these).
 * The state machine itself is drawn in schema/migrations/0001_ledger.sql and followed literally by
 * its functions; test/integration/states.test.ts checks OPERATION_STATUSES against the
 * CHECK constraint on operations.status.
 */
import { storableText } from '../text';

export const OPERATION_STATUSES = ['reserved', 'succeeded', 'failed', 'unknown', 'review'] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/** What Reserve tells the workflow, one output each (in this order). */
export const RESERVE_OUTCOMES = [
	'proceed',
	'already_succeeded',
	'in_progress',
	'needs_reconcile',
	'conflict',
	'failed_permanently',
] as const;
export type ReserveOutcome = (typeof RESERVE_OUTCOMES)[number];

/** What a caller reports to Confirm. */
export const CONFIRM_OUTCOMES = ['succeeded', 'failed', 'unknown'] as const;
export type ConfirmOutcome = (typeof CONFIRM_OUTCOMES)[number];

/** How Confirm treated a report. */
export const CONFIRM_RESULTS = ['recorded', 'repeated', 'stale', 'not_found', 'busy'] as const;
export type ConfirmResult = (typeof CONFIRM_RESULTS)[number];

/**
 * Reserve Operation's outputs after Unrecorded, one per outcome, in the order of
 * RESERVE_OUTCOMES.
 */
export const RESERVE_OUTPUT_LABELS: Readonly<Record<ReserveOutcome, string>> = {
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

/** Limits checked before anything is written. */
export const LIMITS = {
	/** Operation keys: 1..512 bytes of UTF-8 (the table's CHECK constraint agrees). */
	maxKeyBytes: 512,
	/** Lease: 1 second .. 7 days. */
	minLeaseSeconds: 1,
	maxLeaseSeconds: 7 * 24 * 3600,
	/** Requests stored for reconcile lookups: at most 1 MiB of canonical JSON. */
	maxRequestBytes: 1024 * 1024,
	/** Target names: at most 200 characters. */
	maxTargetLength: 200,
	/** External references: at most 1000 characters. */
	maxReferenceLength: 1000,
} as const;

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
