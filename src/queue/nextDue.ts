/**
 * Priority Dequeue → Next Due: when the queue next has claimable work, in one read-only round trip
 * to schema/functions/queue/queue_wake_state.sql for every group (which answers queue_next_due's
 * due time with the queue's clock beside it). The trigger's poll of its own groups, with a
 * progress marker, is wakeState.ts.
 */
import { checkQueueName, fn, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';

export interface NextDue {
	/** Earliest time a task becomes claimable (ready head or expired lease), ISO-8601; null when the queue has no pending or processing task. */
	dueAt: string | null;
	/** True when dueAt <= the database's now. */
	due: boolean;
	/** Milliseconds from the database's now until dueAt (0 when due, null when nothing is pending). */
	inMs: number | null;
	/**
	 * Only from nextDueFor(): a progress marker (decimal string): the id of the first claimable task
	 * of the groups in claim order, '0' when none.
	 * The same value before and after an execution while work is due means it claimed nothing.
	 */
	claims?: string;
}

/**
 * Reads the first entry per group of the ready index and the earliest lease expiry. Read-only.
 * `bounds`: statement and lock timeouts when `db` is a pool (src/db/bounds.ts); LedgerBusyError when one fires.
 */
export async function nextDue(db: Queryable, schema: LedgerSchema, queue: string, bounds?: Bounds): Promise<NextDue> {
	checkQueueName(queue);
	// queue_wake_state with no groups answers queue_next_due's due_at, with the queue's clock beside it.
	const rows = await boundedQuery<{ due_at: Date | null; now: Date }>(db, `SELECT due_at, now FROM ${fn(schema, 'queue_wake_state')}($1, NULL::text[])`, [queue], bounds, { readOnly: true });
	return toNextDue(rows[0]?.due_at ?? null, rows[0].now);
}

/** A due time and the database's now as a NextDue (shared with wakeState.ts). */
export function toNextDue(dueAt: Date | null, now: Date): NextDue {
	if (!dueAt) return { dueAt: null, due: false, inMs: null };
	const inMs = Math.max(0, dueAt.getTime() - now.getTime());
	return { dueAt: iso(dueAt), due: inMs === 0, inMs };
}
