/**
 * Cancel: an operator (or a workflow acting for one) stops a task by id or by dedupe key, with a
 * reason. A waiting task ends cancelled at once; a task held by a live lease is marked
 * cancel-requested and ends cancelled at its holder's next settle or lease extension, which answer
 * `cancelled` (the holder must stop), or when the lease expires. SQL: queue_cancel.
 */
import type { CancelOutcome, TaskState } from './states';
import { checkDedupeKey } from './enqueue';
import { markPrepared, prepareOnce } from './prepared';
import { checkQueueName, checkTaskId, fn, idText, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { InputError } from '../errors';
import { TEXT_LIMITS } from '../limits';
import { storableText } from '../text';


export interface CancelInput {
	/** The queue the task belongs to (by id: a task of another queue is not_found, as Requeue Dead by id). */
	queue: string;
	/** The task, by id: a positive bigint as text or a safe integer. */
	taskId?: string | number | null;
	/** Or by dedupe key: the live (pending or processing) task of `queue` holding `dedupeKey`. */
	dedupeKey?: string | null;
	/** Why (recorded as cancel_reason; made storable and cut on a code-point boundary to TEXT_LIMITS.maxCancelReasonLength, 2,000 UTF-16 units; 'cancelled' when empty). */
	reason?: string | null;
	/** Who asked (recorded as cancelled_by; cut to TEXT_LIMITS.maxCancelledByLength, 60 units; null when empty). */
	cancelledBy?: string | null;
}

export interface CancelResult {
	taskId: string | null;
	/**
	 * cancelled (waiting, or its lease had expired: ended now, in the archive) | cancel_requested
	 * (held by a live lease: its holder's next settle or extension answers cancelled) | finished
	 * (already succeeded, dead or cancelled: nothing changed) | not_found.
	 */
	outcome: CancelOutcome;
	status: TaskState | null;
	/** When the cancel was first requested (ISO-8601), for cancel_requested. */
	cancelRequestedAt: string | null;
	detail: string | null;
}

interface Row {
	idx: number;
	id: string | null;
	outcome: CancelOutcome;
	status: TaskState | null;
	cancel_requested_at: Date | null;
	detail: string | null;
}

/**
 * Checks one input: a queue name (checkQueueName) and either a task id (checkTaskId) or a dedupe
 * key (checkDedupeKey, NFC), exactly one of the two. Returns it normalised and prepared (prepared.ts). Throws InputError.
 */
export function prepareCancelInput(it: CancelInput): CancelInput {
	const hasId = it.taskId !== undefined && it.taskId !== null && it.taskId !== '';
	const hasKey = it.dedupeKey !== undefined && it.dedupeKey !== null && it.dedupeKey !== '';
	if (hasId === hasKey) throw new InputError('Cancel needs either a task ID or a dedupe key, not both and not neither');
	const queue = checkQueueName(it.queue);
	const reason = storableText(String(it.reason ?? ''), TEXT_LIMITS.maxCancelReasonLength).trim() || 'cancelled';
	const by = storableText(String(it.cancelledBy ?? ''), TEXT_LIMITS.maxCancelledByLength).trim() || null;
	return markPrepared(
		hasId
			? { queue, taskId: checkTaskId(it.taskId), reason, cancelledBy: by }
			: { queue, dedupeKey: checkDedupeKey(it.dedupeKey), reason, cancelledBy: by },
	);
}

/**
 * Cancels a batch in one statement (each item's task locked in turn; the batch's lock waits share
 * one budget). Results in input order. Throws InputError for a malformed item (before any write);
 * LedgerBusyError/timeouts as every bounded call (src/db/bounds.ts). Sending it again is answered
 * from what was recorded (finished, or cancel_requested again), so a lost COMMIT is repeat-safe.
 */
export async function cancel(db: Queryable, schema: LedgerSchema, items: CancelInput[], bounds?: Bounds): Promise<CancelResult[]> {
	if (items.length === 0) return [];
	const payload = items
		.map((it) => prepareOnce(it, prepareCancelInput))
		.map((it, i) => (it.taskId ? { i, queue: it.queue, id: String(it.taskId), reason: it.reason, by: it.cancelledBy } : { i, queue: it.queue, key: it.dedupeKey, reason: it.reason, by: it.cancelledBy }));
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_cancel')}($1::jsonb)`, [JSON.stringify(payload)], bounds, { repeatSafe: true });
	const out: CancelResult[] = new Array(items.length);
	for (const r of rows)
		out[r.idx] = { taskId: idText(r.id), outcome: r.outcome, status: r.status, cancelRequestedAt: iso(r.cancel_requested_at), detail: r.detail };
	return out;
}
