/**
 * Stats: depth per group, oldest wait, in flight, dead; and a sample of dead tasks.
 */
import { markPrepared, prepareOnce } from './prepared';
import { checkInt, checkQueueName, fn, idText, iso, type Queryable, type LedgerSchema } from './types';
import { boundedTransaction, type Bounds } from '../db/bounds';
import type { DeadReason } from './states';
import { LIMITS } from '../limits';

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
	/** Seconds since the oldest pending task (ready or delayed) of the group was enqueued (0 when none). */
	oldestPendingSeconds: number;
}

/**
 * The table and the database around the queue (queue_health): what makes a Postgres queue slow
 * down before it does. See docs/queue.md, "Long transactions and vacuum".
 */
export interface QueueTableHealth {
	/** pg_stat_user_tables for queue_tasks (statistics, a second or so behind; null when reset). */
	liveTuples: number | null;
	/** Dead row versions not yet vacuumed. Thousands that do not shrink: a long transaction, or vacuum off. */
	deadTuples: number | null;
	lastVacuum: string | null;
	lastAutovacuum: string | null;
	vacuumCount: number | null;
	autovacuumCount: number | null;
	/** The server's `autovacuum` setting. */
	autovacuumOn: boolean;
	/**
	 * The open transaction holding back the xmin horizon the longest (other than this session):
	 * its xid age (transactions), how long it has been open (seconds), pid and state. Null when none.
	 * Sessions of other roles are only visible with pg_read_all_stats (or as superuser).
	 */
	oldestXmin: { ageXids: number; transactionSeconds: number; pid: number; state: string | null } | null;
	/** Largest xid age of a replication slot's xmin (also holds the horizon), or null. */
	replicationSlotXminAge: number | null;
	/** Prepared (two-phase) transactions still open (they hold the horizon too). */
	preparedTransactions: number;
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
	/** Seconds since the oldest pending task of the queue was enqueued, over all groups (0 when none). */
	oldestPendingSeconds: number;
	/**
	 * The pauses in force (Pause; docs/queue.md, "Pause and resume"): group null = the whole queue,
	 * with since when (ISO-8601), by whom and why. Empty when nothing of the queue is paused.
	 */
	paused: { group: string | null; pausedAt: string; pausedBy: string | null; reason: string | null }[];
	/** Table and database figures (dead tuples, vacuum, the oldest open transaction). */
	table: QueueTableHealth;
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
	/** Why it went dead (DEAD_REASONS, src/queue/states.ts; null for older rows). */
	deadReason: DeadReason | null;
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

interface HealthRow {
	groups_oldest_pending: Record<string, number>;
	live_tuples: string | null;
	dead_tuples: string | null;
	last_vacuum: Date | null;
	last_autovacuum: Date | null;
	vacuum_count: string | null;
	autovacuum_count: string | null;
	autovacuum_on: boolean;
	xmin_age_xids: number | null;
	xmin_xact_secs: number | null;
	xmin_pid: number | null;
	xmin_state: string | null;
	slot_xmin_age: number | null;
	prepared_xacts: string;
	pauses: { group: string | null; paused_at: string; paused_by: string | null; reason: string | null }[];
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

/**
 * Reads the queue's depth (one statement: counts over the queue's live rows, linear in the queue's
 * size, so call it from a schedule, not per task) and its table health (queue_health: statistics
 * views and one aggregate over the pending rows). Two read-only statements in one transaction,
 * bounded by `bounds` when `db` is a pool (src/db/bounds.ts: statement_timeout applies to each; on a
 * large queue raise the credential's Statement Timeout). Throws InputError, and LedgerBusyError
 * when a bound fires.
 */
export async function stats(db: Queryable, schema: LedgerSchema, queue: string, bounds?: Bounds): Promise<QueueStats> {
	const q = checkQueueName(queue);
	return boundedTransaction(db, bounds, (t) => readStats(t, schema, q), { readOnly: true });
}

/** Both statements of stats() on `t`, a client inside a bounded transaction (boundedTransaction). */
async function readStats(t: Queryable, schema: LedgerSchema, queue: string): Promise<QueueStats> {
	const { rows } = await t.query<StatsRow>(`SELECT s.*, now() AS measured_at FROM ${fn(schema, 'queue_stats')}($1) s`, [queue]);
	const { rows: hr } = await t.query<HealthRow>(`SELECT * FROM ${fn(schema, 'queue_health')}($1)`, [queue]);
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
		oldestPendingSeconds: 0,
	}));
	const h = hr[0];
	const pendingAge = h?.groups_oldest_pending ?? {};
	for (const g of groups) g.oldestPendingSeconds = Number(pendingAge[g.group] ?? 0);
	const table: QueueTableHealth = {
		liveTuples: num(h?.live_tuples ?? null),
		deadTuples: num(h?.dead_tuples ?? null),
		lastVacuum: iso(h?.last_vacuum),
		lastAutovacuum: iso(h?.last_autovacuum),
		vacuumCount: num(h?.vacuum_count ?? null),
		autovacuumCount: num(h?.autovacuum_count ?? null),
		autovacuumOn: h?.autovacuum_on ?? false,
		oldestXmin:
			h && h.xmin_age_xids !== null
				? { ageXids: Number(h.xmin_age_xids), transactionSeconds: Number(h.xmin_xact_secs ?? 0), pid: Number(h.xmin_pid), state: h.xmin_state }
				: null,
		replicationSlotXminAge: num(h?.slot_xmin_age ?? null),
		preparedTransactions: Number(h?.prepared_xacts ?? 0),
	};
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
		oldestPendingSeconds: groups.reduce((a, g) => Math.max(a, g.oldestPendingSeconds), 0),
		paused: (h?.pauses ?? []).map((p) => ({ group: p.group, pausedAt: iso(new Date(p.paused_at)) as string, pausedBy: p.paused_by, reason: p.reason })),
		table,
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
	dead_reason: DeadReason | null;
	requeues: number;
	enqueued_at: Date;
	dead_at: Date;
}

/** listDead's limit (LIMITS.listDeadLimit). Throws InputError. */
export function checkListDeadLimit(limit: unknown): number {
	return checkInt(limit, 'Dead task limit', LIMITS.listDeadLimit);
}

/** The most recent dead tasks of a queue, newest first (limit: LIMITS.listDeadLimit, 1 to 1000). Read-only. `bounds`: as in stats(). */
export async function listDead(db: Queryable, schema: LedgerSchema, queue: string, limit: number, bounds?: Bounds): Promise<DeadTask[]> {
	const q = checkQueueName(queue);
	const n = checkListDeadLimit(limit);
	return boundedTransaction(db, bounds, (t) => readDead(t, schema, q, n), { readOnly: true });
}

/** What Priority Dequeue's Stats operation asks for one input item. */
export interface StatsRequest {
	queue: string;
	/** Also list this many of the most recent dead tasks (LIMITS.statsDeadTasks: 0 to 1000; default 0: none). */
	deadTasks?: number;
}

/** Checks a stats request; returns it normalised, prepared (prepared.ts). Throws InputError. */
export function prepareStatsRequest(request: StatsRequest): StatsRequest {
	return markPrepared({ queue: checkQueueName(request.queue), deadTasks: checkInt(request.deadTasks ?? LIMITS.statsDeadTasks.default, 'Include dead tasks', LIMITS.statsDeadTasks) });
}

/**
 * stats() of the queue, plus listDead() of it when deadTasks > 0 (else null), in one transaction
 * bounded by `bounds` as stats() is. Read-only. Throws InputError, LedgerBusyError.
 */
export async function statsReport(
	db: Queryable,
	schema: LedgerSchema,
	request: StatsRequest,
	bounds?: Bounds,
): Promise<{ stats: QueueStats; deadTasks: DeadTask[] | null }> {
	const { queue, deadTasks } = prepareOnce(request, prepareStatsRequest);
	return boundedTransaction(db, bounds, async (t) => {
		const s = await readStats(t, schema, queue);
		return { stats: s, deadTasks: deadTasks ? await readDead(t, schema, queue, deadTasks) : null };
	}, { readOnly: true });
}

/** The dead-task list on `t`, a client inside a bounded transaction. */
async function readDead(t: Queryable, schema: LedgerSchema, queue: string, n: number): Promise<DeadTask[]> {
	const { rows } = await t.query<DeadRow>(`SELECT * FROM ${fn(schema, 'queue_list_dead')}($1, $2)`, [queue, n]);
	return rows.map((r) => ({
		taskId: idText(r.id) as string,
		queue: r.queue,
		group: r.priority_group,
		payload: r.payload,
		dedupeKey: r.dedupe_key,
		attempts: r.attempts,
		maxAttempts: r.max_attempts,
		lastError: r.last_error,
		deadReason: r.dead_reason ?? null,
		requeues: r.requeues,
		enqueuedAt: iso(r.enqueued_at) as string,
		deadAt: iso(r.dead_at) as string,
	}));
}
