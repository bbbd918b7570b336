/**
 * Stats: depth per group, oldest wait, in flight, dead; and a sample of dead tasks.
 */
import { checkInt, checkQueueName, fn, idText, iso, type Queryable } from './types';

export interface GroupStats {
	group: string;
	/** Pending and claimable now. */
	ready: number;
	/** Pending with a not-before or retry time in the future. */
	delayed: number;
	/** Processing with a live lease. */
	inFlight: number;
	/** Processing whose lease is over (claimable again by the next dequeue). */
	expiredLeases: number;
	dead: number;
	/** Availability time of the oldest ready task (ISO-8601), or null. */
	oldestReadyAt: string | null;
	/** How long the oldest ready task has waited, seconds (0 when none). */
	oldestWaitSeconds: number;
	succeededLastHour: number;
}

export interface QueueStats {
	queue: string;
	groups: GroupStats[];
	/** ready + delayed over all groups. */
	depth: number;
	ready: number;
	delayed: number;
	inFlight: number;
	expiredLeases: number;
	dead: number;
	oldestWaitSeconds: number;
	succeededLastHour: number;
	/** Database time of the measurement (ISO-8601). */
	measuredAt: string;
}

export interface DeadTask {
	taskId: string;
	queue: string;
	group: string;
	payload: unknown;
	dedupeKey: string | null;
	attempts: number;
	maxAttempts: number;
	lastError: string | null;
	requeues: number;
	enqueuedAt: string;
	deadAt: string;
}

interface StatsRow {
	priority_group: string;
	ready: string;
	delayed: string;
	in_flight: string;
	expired_leases: string;
	dead: string;
	oldest_ready_at: Date | null;
	oldest_wait_secs: number | null;
	succeeded_last_hour: string;
	measured_at: Date;
}

/**
 * Reads the queue's depth in one statement (counts over the queue's live rows: linear in the
 * queue's size, so call it from a schedule, not per task). Read-only. Throws QueueInputError.
 */
export async function stats(db: Queryable, schema: string, queue: string): Promise<QueueStats> {
	checkQueueName(queue);
	const { rows } = await db.query<StatsRow>(`SELECT s.*, now() AS measured_at FROM ${fn(schema, 'queue_stats')}($1) s`, [queue]);
	const groups: GroupStats[] = rows.map((r) => ({
		group: r.priority_group,
		ready: Number(r.ready),
		delayed: Number(r.delayed),
		inFlight: Number(r.in_flight),
		expiredLeases: Number(r.expired_leases),
		dead: Number(r.dead),
		oldestReadyAt: iso(r.oldest_ready_at),
		oldestWaitSeconds: Number(r.oldest_wait_secs ?? 0),
		succeededLastHour: Number(r.succeeded_last_hour),
	}));
	const sum = (k: keyof GroupStats) => groups.reduce((a, g) => a + (g[k] as number), 0);
	return {
		queue,
		groups,
		depth: sum('ready') + sum('delayed'),
		ready: sum('ready'),
		delayed: sum('delayed'),
		inFlight: sum('inFlight'),
		expiredLeases: sum('expiredLeases'),
		dead: sum('dead'),
		oldestWaitSeconds: groups.reduce((a, g) => Math.max(a, g.oldestWaitSeconds), 0),
		succeededLastHour: sum('succeededLastHour'),
		measuredAt: iso(rows[0]?.measured_at ?? new Date()) as string,
	};
}

interface DeadRow {
	id: string;
	queue: string;
	priority_group: string;
	payload: unknown;
	dedupe_key: string | null;
	attempts: number;
	max_attempts: number;
	last_error: string | null;
	requeues: number;
	enqueued_at: Date;
	dead_at: Date;
}

/** The most recent dead tasks of a queue, newest first (limit 1 to 1000). Read-only. */
export async function listDead(db: Queryable, schema: string, queue: string, limit: number): Promise<DeadTask[]> {
	checkQueueName(queue);
	const n = checkInt(limit, 'Dead task limit', 1, 1000);
	const { rows } = await db.query<DeadRow>(`SELECT * FROM ${fn(schema, 'queue_list_dead')}($1, $2)`, [queue, n]);
	return rows.map((r) => ({
		taskId: idText(r.id) as string,
		queue: r.queue,
		group: r.priority_group,
		payload: r.payload,
		dedupeKey: r.dedupe_key,
		attempts: r.attempts,
		maxAttempts: r.max_attempts,
		lastError: r.last_error,
		requeues: r.requeues,
		enqueuedAt: iso(r.enqueued_at) as string,
		deadAt: iso(r.dead_at) as string,
	}));
}
