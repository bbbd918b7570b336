/**
 * The closed lists of the ledger, named once. The state machine itself is drawn in
 * schema/migrations/0001_ledger.sql and followed literally by its functions.
 */
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

/** Context recorded on every event: which execution, workflow and node caused it. */
export interface EventContext {
	executionId?: string;
	workflowId?: string;
	nodeName?: string;
}

/** Converts a pg timestamptz to ISO-8601 (src/db/values.ts, shared with the queue). */
export { iso } from '../db/values';
