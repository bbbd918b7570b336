/**
 * Requeue dead: a human (or a workflow acting for one) puts dead-lettered tasks back to pending.
 */
import type { RequeueOutcome, TaskState } from './states';
import { markPrepared, prepareOnce } from './prepared';
import { checkGroupName, checkInt, checkQueueName, checkTaskId, fn, idText, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { LIMITS } from '../limits';

export interface RequeueDeadOptions {
	queue: string;
	/** Requeue exactly these tasks (of `queue`); omit to requeue the oldest dead tasks of the queue. */
	taskIds?: Array<string | number>;
	/** Only dead tasks of this group (when taskIds is omitted). */
	group?: string | null;
	/** At most this many (when taskIds is omitted; 1 to 10,000, default 50). */
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
 * Checks requeue options (queue name; task ids as checkTaskId; group name or null; limit 1 to
 * 10,000, default 50) and returns them normalised, prepared (prepared.ts). Throws InputError.
 */
export function prepareRequeueDeadOptions(options: RequeueDeadOptions): RequeueDeadOptions {
	return markPrepared({
		queue: checkQueueName(options.queue),
		taskIds: options.taskIds ? options.taskIds.map(checkTaskId) : undefined,
		group: options.group ? checkGroupName(options.group) : null,
		limit: checkInt(options.limit ?? LIMITS.requeueDeadLimit.default, 'Limit', LIMITS.requeueDeadLimit),
	});
}

/**
 * Requeues dead tasks in one statement: pending now, attempts 0, requeues + 1, last error kept.
 * A task whose dedupe key belongs to a live task again is skipped (skipped_live_duplicate).
 * Outcomes: requeued | skipped_live_duplicate | not_dead | not_found. Throws InputError.
 * `bounds`: statement and lock timeouts when `db` is a pool (src/db/bounds.ts); a bound that fires
 * throws LedgerBusyError and nothing was requeued.
 */
export async function requeueDead(db: Queryable, schema: LedgerSchema, options: RequeueDeadOptions, bounds?: Bounds): Promise<RequeueResult[]> {
	const { queue, taskIds, group, limit } = prepareOnce(options, prepareRequeueDeadOptions);
	const ids = taskIds ? taskIds.map(String) : null;
	if (ids && ids.length === 0) return [];
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_requeue_dead')}($1, $2::bigint[], $3, $4)`, [queue, ids, group, limit], bounds, {
		// By ids: a task already requeued is no longer dead (not_dead). By filter: a repeat requeues further dead tasks.
		repeatSafe: ids !== null,
	});
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

/** One task to requeue by id (Priority Dequeue's Requeue Dead "by ID": one per input item). */
export interface RequeueByIdInput {
	queue: string;
	taskId: string | number;
}

/** Checks one by-id input (queue name, task id); returns it normalised, prepared (prepared.ts). Throws InputError. */
export function prepareRequeueByIdInput(it: RequeueByIdInput): RequeueByIdInput {
	return markPrepared({ queue: checkQueueName(it.queue), taskId: checkTaskId(it.taskId) });
}

/**
 * Requeues the given dead tasks: one requeueDead call per queue they name (usually one). Returns
 * one result per input, in input order; the same task twice is requeued once, the repeat reports
 * not_dead. Throws InputError (before anything is sent). `bounds`: as in requeueDead(), for
 * each call.
 */
export async function requeueDeadByIds(db: Queryable, schema: LedgerSchema, items: RequeueByIdInput[], bounds?: Bounds): Promise<RequeueResult[]> {
	const inputs = items.map((it) => prepareOnce(it, prepareRequeueByIdInput));
	const byQueue = new Map<string, string[]>();
	for (const it of inputs) byQueue.set(it.queue, [...(byQueue.get(it.queue) ?? []), String(it.taskId)]);
	const found = new Map<string, RequeueResult>();
	for (const [queue, taskIds] of byQueue) {
		for (const r of await requeueDead(db, schema, markPrepared({ queue, taskIds, group: null, limit: 100 }), bounds)) found.set(`${queue}\u0000${r.taskId}`, r);
	}
	const seen = new Set<string>();
	return inputs.map((it) => {
		const k = `${it.queue}\u0000${String(it.taskId)}`;
		const r = found.get(k) as RequeueResult;
		const repeat = seen.has(k);
		seen.add(k);
		return repeat && r.outcome === 'requeued' ? { ...r, outcome: 'not_dead' } : r;
	});
}
