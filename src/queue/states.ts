/**
 * The queue's facts, each named once: task states, settle and requeue outcomes, default groups and
 * numbers. The state diagram is drawn once, in docs/queue.md ("Task life");
 * test/integration/states.test.ts checks these lists against the CHECK constraints on
 * queue_tasks.status and queue_tasks_archive.status.
 */
export const TASK_STATES = ['pending', 'processing', 'succeeded', 'dead'] as const;
export type TaskState = (typeof TASK_STATES)[number];
/** The states a row of queue_tasks can hold (a succeeded task moves to the archive at once). */
export const LIVE_TABLE_STATES = ['pending', 'processing', 'dead'] as const satisfies readonly TaskState[];
/** The states a row of queue_tasks_archive can hold. */
export const ARCHIVE_STATES = ['succeeded', 'dead'] as const satisfies readonly TaskState[];
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
] as const;
export type SettleOutcome = (typeof SETTLE_OUTCOMES)[number];

/** Outcomes of requeueing a dead task. */
export const REQUEUE_OUTCOMES = ['requeued', 'skipped_live_duplicate', 'not_dead', 'not_found'] as const;
export type RequeueOutcome = (typeof REQUEUE_OUTCOMES)[number];

/** A priority group and its weighted-fair share. Groups are listed highest priority first. */
export interface GroupWeight {
	name: string;
	/** Integer >= 1: the group's share of claims while every group has work. */
	weight: number;
}

/** high : normal : low = 5 : 2 : 1. */
export const DEFAULT_GROUPS: readonly GroupWeight[] = Object.freeze([
	{ name: 'high', weight: 5 },
	{ name: 'normal', weight: 2 },
	{ name: 'low', weight: 1 },
]);

export const DEFAULT_MAX_ATTEMPTS = 5;
export const DEFAULT_LEASE_SECONDS = 300;
/** Default aging interval: a waiting group moves one position up per 5 minutes its head waited. */
export const DEFAULT_AGING_SECONDS = 300;
export const DEFAULT_BACKOFF_BASE_SECONDS = 5;
export const DEFAULT_BACKOFF_CAP_SECONDS = 3600;
