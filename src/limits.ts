/**
 * Every numeric bound and default of a parameter the nodes take, written once. The core checks
 * (`prepare…`/`check…` functions) and the nodes' parameters (typeOptions, defaults, the ranges
 * named in descriptions) read them from here; the SQL functions check the same bounds again as
 * literals, and test/integration/limits.test.ts calls each SQL function just inside and just
 * outside every bound below that the database checks, so a change on one side alone fails it.
 *
 * Each entry: `min` and `max` inclusive, in the unit its name says (seconds, milliseconds, days,
 * a count); `default` where the parameter has one. src/db/bounds.ts applies the credential's
 * timeouts (its DEFAULTS and RANGES read them from here).
 */

/** An inclusive range, and the default where there is one. */
export interface Limit {
	readonly min: number;
	readonly max: number;
	readonly default?: number;
}

const DAY = 86_400;

export const LIMITS = {
	// ---- The credential (every node and the trigger) ----
	/** Connections each n8n process opens to the database for these nodes. */
	maxConnections: { min: 1, max: 100, default: 5 },
	/** Longest wait for a pool connection or a new connection's handshake, milliseconds. */
	connectTimeoutMs: { min: 100, max: 600_000, default: 10_000 },
	/** Longest a batch statement may run (SET LOCAL statement_timeout), milliseconds. */
	statementTimeoutMs: { min: 100, max: 600_000, default: 30_000 },
	/** Longest wait for the locks of one batch (SET LOCAL lock_timeout; one budget per batch), milliseconds. */
	lockTimeoutMs: { min: 10, max: 600_000, default: 5_000 },

	// ---- Ledger (Reserve Operation, Guarded HTTP Request, Reconcile Unknown, Admin) ----
	/** How long Reserve's lease holds an operation, seconds (7 days at most). SQL: reserve_operations. */
	leaseSeconds: { min: 1, max: 7 * DAY, default: 300 },
	/**
	 * How long after an operation became unknown a write may still land at the target, seconds
	 * (30 days at most; above zero). SQL: reserve_operations, and operations.settle_seconds' CHECK.
	 */
	settleWindowSeconds: { min: 1, max: 30 * DAY, default: 120 },
	/** Reconcile Unknown (Claim): most operations to claim. SQL: reconcile_claim. */
	reconcileBatchSize: { min: 1, max: 1000, default: 50 },
	/** Reconcile Unknown (Claim): extra seconds on top of each operation's settle window. SQL: reconcile_claim. */
	reconcileSettleDelaySeconds: { min: 0, max: 30 * DAY, default: 0 },
	/** Reconcile Unknown (Claim): how long a claim keeps other reconcilers away, seconds. SQL: reconcile_claim. */
	reconcileClaimSeconds: { min: 1, max: DAY, default: 300 },
	/** Reconcile Unknown (Resolve): inconclusive checks before review. SQL: reconcile_resolve. */
	resolveMaxChecks: { min: 1, max: 1000, default: 10 },
	/** Reconcile Unknown (Resolve): first backoff between checks, seconds. SQL: reconcile_resolve. */
	resolveBackoffBaseSeconds: { min: 1, max: DAY, default: 60 },
	/** Reconcile Unknown (Resolve): longest backoff between checks, seconds. SQL: reconcile_resolve. */
	resolveBackoffMaxSeconds: { min: 1, max: 30 * DAY, default: 3600 },
	/** Admin (Get): most events returned with the operation. SQL: ops_get_operation. */
	getMaxEvents: { min: 1, max: 10_000, default: 500 },
	/** Admin (List): page size. SQL: ops_list_operations. */
	listPageSize: { min: 1, max: 1000, default: 50 },
	/** Admin (List): only operations at least this old, seconds (10 years of 366 days). */
	listMinAgeSeconds: { min: 0, max: 10 * 366 * DAY, default: 0 },
	/** Admin (Health): days of events counted. SQL: ops_health. */
	healthDays: { min: 1, max: 366, default: 7 },
	/** Admin (Compact / Hard Delete): only operations settled more than this many days ago. */
	retentionOlderThanDays: { min: 1, max: 36_500, default: 90 },
	/** Admin (Compact / Hard Delete): operations per batch. SQL: ops_compact_batch, ops_hard_delete_batch. */
	retentionBatchSize: { min: 1, max: 10_000, default: 1000 },
	/** Admin (Compact / Hard Delete): most batches per execution. */
	retentionMaxBatches: { min: 1, max: 100_000, default: 100 },
	/** Admin (Compact / Hard Delete): start no new batch after this many milliseconds. */
	retentionMaxDurationMs: { min: 1000, max: 3_600_000, default: 60_000 },
	/** Admin (Compact / Hard Delete): statement and lock timeout of each batch, milliseconds. */
	retentionStatementTimeoutMs: { min: 100, max: 600_000, default: 30_000 },

	// ---- Queue (Priority Dequeue and its trigger) ----
	/** A claim's lease (visibility timeout), seconds (1 day at most). SQL: queue_claim, queue_extend_lease. */
	queueLeaseSeconds: { min: 1, max: DAY, default: 300 },
	/** Most tasks one claim takes. SQL: queue_claim. */
	dequeueBatchSize: { min: 1, max: 10_000, default: 10 },
	/**
	 * Aging interval, seconds: 0 switches aging off, else at least agingMinPositiveSeconds (below a
	 * millisecond the aging position would leave the double range). SQL: queue_claim.
	 */
	agingSeconds: { min: 0, max: 365 * DAY, default: 300 },
	/** Number of priority groups a claim names. SQL: queue_claim. */
	priorityGroups: { min: 1, max: 20 },
	/** A priority group's weight (its share of claims while every group has work). SQL: queue_claim. */
	groupWeight: { min: 1, max: 1000, default: 1 },
	/** Claims allowed before a task goes dead. SQL: queue_enqueue. */
	maxAttempts: { min: 1, max: 1000, default: 5 },
	/** Seconds from now before an enqueued task may be claimed. SQL: queue_enqueue. */
	enqueueDelaySeconds: { min: 0, max: 365 * DAY, default: 0 },
	/** Enqueue's throttle window: at most one task per dedupe key per this many seconds (from its enqueue). SQL: queue_enqueue (item field 'w'). */
	enqueueThrottleSeconds: { min: 1, max: 365 * DAY, default: 60 },
	/** Enqueue's debounce window: the task runs this many seconds after the last enqueue of its dedupe key. SQL: queue_enqueue (item field 'b'). */
	enqueueDebounceSeconds: { min: 1, max: 365 * DAY, default: 10 },
	/** Seconds before a released task may be claimed again. SQL: queue_release. */
	releaseDelaySeconds: { min: 0, max: 365 * DAY, default: 0 },
	/** Fail's backoff of the first retry before jitter, seconds. SQL: queue_fail. */
	backoffBaseSeconds: { min: 0, max: DAY, default: 5 },
	/** Fail's upper bound of the backoff before jitter, seconds. SQL: queue_fail. */
	backoffCapSeconds: { min: 0, max: 365 * DAY, default: 3600 },
	/** Fail with Retry Delay Fixed: every retry waits exactly this long, seconds (no jitter). SQL: queue_fail (item field 'delay'). */
	fixedDelaySeconds: { min: 0, max: 365 * DAY, default: 60 },
	/** Stats: also list this many of the most recent dead tasks. */
	statsDeadTasks: { min: 0, max: 1000, default: 0 },
	/** The most recent dead tasks listed (listDead). SQL: queue_list_dead. */
	listDeadLimit: { min: 1, max: 1000, default: 10 },
	/** Requeue Dead (by queue): most dead tasks requeued. SQL: queue_requeue_dead. */
	requeueDeadLimit: { min: 1, max: 10_000, default: 50 },
	/** Purge: most tasks deleted per call. SQL: queue_purge. */
	purgeLimit: { min: 1, max: 100_000, default: 10_000 },
	/** Purge: retention of dead and archived tasks, seconds (100 years: now() minus more could leave the timestamp range). SQL: queue_purge. */
	purgeRetentionSeconds: { min: 0, max: 3_153_600_000 },

	// ---- Priority Dequeue Trigger (checked by the node: it has no core operation of its own) ----
	/** How often the trigger checks the queue without a notification, seconds. */
	triggerPollSeconds: { min: 1, max: DAY, default: 30 },
	/** Executions the trigger may have running at once. */
	triggerMaxInFlight: { min: 1, max: 100, default: 1 },
	/** After this long a started execution no longer counts as running, seconds. */
	triggerExecutionTimeoutSeconds: { min: 1, max: DAY, default: 600 },
	/** Executions the trigger starts in any 60-second window. */
	triggerMaxPerMinute: { min: 1, max: 6000, default: 120 },
} as const satisfies Record<string, Limit>;

/** Sizes of the texts the ledger stores, checked before anything is written. */
export const TEXT_LIMITS = {
	/** Operation keys: 1..512 bytes of UTF-8 (the table's CHECK constraint agrees). */
	maxKeyBytes: 512,
	/** Requests stored for reconcile lookups: at most 1 MiB of canonical JSON. */
	maxRequestBytes: 1024 * 1024,
	/** Target names: at most 200 characters. */
	maxTargetLength: 200,
	/** External references: at most 1000 characters. */
	maxReferenceLength: 1000,
	/**
	 * Cancel's reason: cut to this many UTF-16 units (never refused: the node records what fits); the
	 * SQL function refuses more than this many characters from a direct caller (queue_cancel).
	 */
	maxCancelReasonLength: 2000,
	/** Cancel's "cancelled by": cut to this many UTF-16 units; queue_cancel refuses more characters. */
	maxCancelledByLength: 60,
	/** Pause's and Resume's reason: cut to this many UTF-16 units; queue_pause / queue_resume refuse more characters. */
	maxPauseReasonLength: 2000,
	/** Pause's and Resume's "by": cut to this many UTF-16 units; queue_pause / queue_resume refuse more characters. */
	maxPausedByLength: 60,
	/**
	 * Settle by ID's reason (recorded as operator_reason, and as last_error for fail and retry): cut to
	 * this many UTF-16 units; queue_settle_by_id refuses more characters from a direct caller.
	 */
	maxSettleByIdReasonLength: 2000,
	/** Settle by ID's "settled by" (operator_by): cut to this many UTF-16 units; queue_settle_by_id refuses more. */
	maxSettleByIdByLength: 60,
	/**
	 * Enqueue's serial key: at most this many bytes of UTF-8, refused above it (never cut: a cut key
	 * would serialise tasks that do not share one). queue_enqueue ("s") and the column's CHECK agree.
	 */
	maxSerialKeyBytes: 512,
} as const;

/** Aging intervals above 0 and below this many seconds are refused (see LIMITS.agingSeconds). */
export const AGING_MIN_POSITIVE_SECONDS = 0.001;

/** "min to max", as parameter descriptions and error messages name a range. */
export function rangeText(limit: Limit): string {
	return `${limit.min} to ${limit.max}`;
}
