/**
 * The Priority Dequeue Trigger's poll: when the queue next has claimable work for the groups it
 * watches, and a progress marker, in one read-only round trip to
 * schema/functions/queue/queue_wake_state.sql (the trigger hands it to its watcher,
 * src/queue/watcher.ts, as the check it runs on each wake).
 */
import { checkQueueName, fn, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { toNextDue, type NextDue } from './nextDue';

/**
 * Like nextDue, restricted to work of `groups` (the groups a consumer's Dequeue claims; null or
 * omitted: every group), plus the progress marker. One round trip to queue_wake_state.
 * Read-only. Throws InputError on an invalid queue name; LedgerBusyError when a bound fires.
 */
export async function nextDueFor(db: Queryable, schema: LedgerSchema, queue: string, groups?: string[] | null, bounds?: Bounds): Promise<NextDue> {
	checkQueueName(queue);
	const rows = await boundedQuery<{ due_at: Date | null; claims: string; now: Date }>(
		db,
		`SELECT due_at, claims, now FROM ${fn(schema, 'queue_wake_state')}($1, $2::text[])`,
		[queue, groups && groups.length > 0 ? groups : null],
		bounds,
		{ readOnly: true },
	);
	return { ...toNextDue(rows[0]?.due_at ?? null, rows[0].now), claims: String(rows[0].claims) };
}
