/**
 * Next due: when the queue next has claimable work (used by the trigger's polling).
 */
import { checkQueueName, fn, iso, type Queryable } from './types';

export interface NextDue {
	/** Earliest time a task becomes claimable (ready head or expired lease), ISO-8601; null when the queue has no pending or processing task. */
	dueAt: string | null;
	/** True when dueAt <= the database's now. */
	due: boolean;
	/** Milliseconds from the database's now until dueAt (0 when due, null when nothing is pending). */
	inMs: number | null;
}

/** Reads the first entry per group of the ready index and the earliest lease expiry. Read-only. */
export async function nextDue(db: Queryable, schema: string, queue: string): Promise<NextDue> {
	checkQueueName(queue);
	const { rows } = await db.query<{ due_at: Date | null; now: Date }>(
		`SELECT ${fn(schema, 'queue_next_due')}($1) AS due_at, now() AS now`,
		[queue],
	);
	const dueAt = rows[0]?.due_at ?? null;
	if (!dueAt) return { dueAt: null, due: false, inMs: null };
	const inMs = Math.max(0, dueAt.getTime() - rows[0].now.getTime());
	return { dueAt: iso(dueAt), due: inMs === 0, inMs };
}
