/**
 * Requeue dead: a human (or a workflow acting for one) puts dead-lettered tasks back to pending.
 */
import type { RequeueOutcome, TaskState } from './states';
import { checkGroupName, checkInt, checkQueueName, checkTaskId, fn, idText, type Queryable } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';

export interface RequeueDeadOptions {
	queue: string;
	/** Requeue exactly these tasks (of `queue`); omit to requeue the oldest dead tasks of the queue. */
	taskIds?: Array<string | number>;
	/** Only dead tasks of this group (when taskIds is omitted). */
	group?: string | null;
	/** At most this many (when taskIds is omitted; 1 to 10,000, default 100). */
	limit?: number;
}

export interface RequeueResult {
	taskId: string;
	outcome: RequeueOutcome;
	queue: string | null;
	group: string | null;
	status: TaskState | null;
	/** The error that killed it, kept for the record. */
	lastError: string | null;
	/** How many times this task was requeued by hand. */
	requeues: number | null;
}

interface Row {
	id: string;
	outcome: RequeueOutcome;
	queue: string | null;
	priority_group: string | null;
	status: TaskState | null;
	last_error: string | null;
	requeues: number | null;
}

/**
 * Requeues dead tasks in one statement: pending now, attempts 0, requeues + 1, last error kept.
 * A task whose dedupe key belongs to a live task again is skipped (skipped_live_duplicate).
 * Outcomes: requeued | skipped_live_duplicate | not_dead | not_found. Throws QueueInputError.
 * `bounds`: statement and lock timeouts when `db` is a pool (src/db/bounds.ts); a bound that fires
 * throws LedgerBusyError and nothing was requeued.
 */
export async function requeueDead(db: Queryable, schema: string, options: RequeueDeadOptions, bounds?: Bounds): Promise<RequeueResult[]> {
	const queue = checkQueueName(options.queue);
	const ids = options.taskIds ? options.taskIds.map(checkTaskId) : null;
	if (ids && ids.length === 0) return [];
	const group = options.group ? checkGroupName(options.group) : null;
	const limit = checkInt(options.limit ?? 100, 'Limit', 1, 10_000);
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_requeue_dead')}($1, $2::bigint[], $3, $4)`, [queue, ids, group, limit], bounds);
	return rows.map((r) => ({
		taskId: idText(r.id) as string,
		outcome: r.outcome,
		queue: r.queue,
		group: r.priority_group,
		status: r.status,
		lastError: r.last_error,
		requeues: r.requeues,
	}));
}
