/**
 * The queue's facts, each named once: task states, how a lease ended and why a task went dead,
 * settle and requeue outcomes, default groups and numbers. The state diagram is drawn once, in
 * docs/queue.md ("Task life"); test/integration/states.test.ts checks the states, LEASE_ENDS and
 * DEAD_REASONS against the CHECK constraints on queue_tasks (and queue_tasks_archive.status), and
 * the outcome lists against the literals the SQL functions that answer with them can return.
 */
export const TASK_STATES = ['pending', 'processing', 'succeeded', 'dead', 'cancelled'] as const;
export type TaskState = (typeof TASK_STATES)[number];
/** The states a row of queue_tasks can hold (a succeeded task moves to the archive at once). */
export const LIVE_TABLE_STATES = ['pending', 'processing', 'dead'] as const satisfies readonly TaskState[];
/** The states a row of queue_tasks_archive can hold (a cancelled task moves there at once, as a succeeded one). */
export const ARCHIVE_STATES = ['succeeded', 'dead', 'cancelled'] as const satisfies readonly TaskState[];
/**
 * How a row's last lease ended (queue_tasks.lease_end; null while the lease is live): completed,
 * failed, gave_up, released (the holder settled it), expired (the expiry sweep ended it), requeued
 * (the task went dead and was requeued by hand), cancelled (a cancel ended the lease: its holder's
 * settle or extension found the cancel request, or the cancel found the lease expired), operator (an
 * operator's Settle by ID acted on the task while the lease held it: the holder's settle answers
 * lease_lost). queue_settle_verdict reads it to answer a late settle.
 */
export const LEASE_ENDS = ['completed', 'failed', 'gave_up', 'released', 'expired', 'requeued', 'cancelled', 'operator'] as const;
export type LeaseEnd = (typeof LEASE_ENDS)[number];

/**
 * Why a task went dead (queue_tasks.dead_reason; null unless dead): max_attempts_reached (a fail at
 * the last attempt), gave_up (a fail with give up), lease_expired_at_max (the lease of the last
 * attempt expired), attempts_exhausted (a pending task whose attempts were used up, found by a
 * claim and never handed out), operator_failed (an operator failed it by id: Settle by ID, act fail).
 */
export const DEAD_REASONS = ['max_attempts_reached', 'gave_up', 'lease_expired_at_max', 'attempts_exhausted', 'operator_failed'] as const;
export type DeadReason = (typeof DEAD_REASONS)[number];

/** Priority Dequeue's one output after Unrecorded. */
export const QUEUE_RESULT_LABEL = 'Result';

/** What a settle call (complete, fail, extend lease, release) did. */
export const SETTLE_OUTCOMES = [
	'completed',
	'retry_scheduled',
	'dead',
	'extended',
	'released',
	/** This lease itself already settled the task (complete, fail, release): a harmless repeat, nothing changed. */
	'already_settled',
	/**
	 * The caller's lease was superseded: it expired (swept or not), another lease claimed the task, or
	 * the task went dead and was requeued by hand. Nothing changed; detail says which
	 * (queue_settle_verdict; the table is in docs/queue.md, "Late settles").
	 */
	'lease_lost',
	'not_found',
	/**
	 * The task was cancelled (Cancel): for a settle or extension under the live lease of a
	 * cancel-requested task, this call ended it cancelled; for any later call, it already was.
	 * Nothing else changed: the holder must stop (a complete's result is not recorded).
	 */
	'cancelled',
] as const;
export type SettleOutcome = (typeof SETTLE_OUTCOMES)[number];

/**
 * What a cancel did (queue_cancel): cancelled (a waiting task, or one whose lease had expired, ended
 * now) | cancel_requested (held by a live lease: its holder's next settle or extension answers
 * cancelled) | finished (it already succeeded, went dead or was cancelled: nothing changed) | not_found.
 */
export const CANCEL_OUTCOMES = ['cancelled', 'cancel_requested', 'finished', 'not_found'] as const;
export type CancelOutcome = (typeof CANCEL_OUTCOMES)[number];

/**
 * What an enqueue did with one item (queue_enqueue; docs/queue.md, "Replace by dedupe key" and
 * "Throttle and debounce"): enqueued (a new task) | duplicate (the dedupe key's live task, unchanged)
 * | replaced (the key's pending task took the item's payload, and run time when asked) |
 * kept_processing (a replace found the key's task being worked on: it keeps its payload, nothing
 * written) | throttled (a task was enqueued with this key less than the throttle window ago:
 * nothing written).
 */
export const ENQUEUE_OUTCOMES = ['enqueued', 'duplicate', 'replaced', 'kept_processing', 'throttled'] as const;
export type EnqueueOutcome = (typeof ENQUEUE_OUTCOMES)[number];

/**
 * Enqueue's On Duplicate Key (the item's dedupe key has a live task): keep (the first task wins,
 * default) | payload (a pending task takes the new payload) | payload_run_at (and the new run time).
 */
export const ON_DUPLICATE_MODES = ['keep', 'payload', 'payload_run_at'] as const;
export type OnDuplicateMode = (typeof ON_DUPLICATE_MODES)[number];

/**
 * What a pause did (queue_pause): paused (recorded now) | already_paused (a pause of the same queue
 * or group was in force: kept with its first time, reason and who; nothing changed).
 */
export const PAUSE_OUTCOMES = ['paused', 'already_paused'] as const;
export type PauseOutcome = (typeof PAUSE_OUTCOMES)[number];

/**
 * What a resume did (queue_resume): resumed (the pause of exactly that queue or group ended now; the
 * queue's triggers are notified) | not_paused (no such pause was in force: nothing changed).
 */
export const RESUME_OUTCOMES = ['resumed', 'not_paused'] as const;
export type ResumeOutcome = (typeof RESUME_OUTCOMES)[number];

/**
 * What an operator may do to a task by id without its lease (Settle by ID, queue_settle_by_id;
 * recorded as operator_action): complete (to the archive, succeeded, with a result) | fail (dead now,
 * dead_reason operator_failed) | retry (pending again at a time, the reason as last_error; dead at max
 * attempts) | reschedule (pending again at a time).
 */
export const OPERATOR_ACTIONS = ['complete', 'fail', 'retry', 'reschedule'] as const;
export type OperatorAction = (typeof OPERATOR_ACTIONS)[number];

/**
 * What Settle by ID did (queue_settle_by_id): completed | dead | retry_scheduled | rescheduled (the
 * act applied; a lease that held the task ended, its holder's settle answers lease_lost) | finished
 * (nothing changed: the task already ended, or it is dead and the act is not complete) |
 * cancel_requested (nothing changed: its holder was asked to stop, Cancel) | not_found.
 */
export const SETTLE_BY_ID_OUTCOMES = ['completed', 'dead', 'retry_scheduled', 'rescheduled', 'finished', 'cancel_requested', 'not_found'] as const;
export type SettleByIdOutcome = (typeof SETTLE_BY_ID_OUTCOMES)[number];

/** Outcomes of requeueing a dead task. */
export const REQUEUE_OUTCOMES = ['requeued', 'skipped_live_duplicate', 'not_dead', 'not_found'] as const;
export type RequeueOutcome = (typeof REQUEUE_OUTCOMES)[number];

/** A priority group and its weighted-fair share. Groups are listed highest priority first. */
export interface GroupWeight {
	name: string;
	/** Integer >= 1: the group's share of claims while every group has work. */
	weight: number;
	/**
	 * True: a strict group, served before every weighted group (strict groups among themselves in
	 * list order, each oldest first); its weight is not used. docs/queue.md, "Strict priority".
	 */
	strict?: boolean;
}

/** high : normal : low = 5 : 2 : 1. */
export const DEFAULT_GROUPS: readonly GroupWeight[] = Object.freeze([
	{ name: 'high', weight: 5 },
	{ name: 'normal', weight: 2 },
	{ name: 'low', weight: 1 },
]);

/* The numeric defaults (lease, aging, attempts, backoff) are in LIMITS, src/limits.ts. */
