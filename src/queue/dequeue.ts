/**
 * Dequeue: claim up to N ready tasks, weighted fair across priority groups, each with a lease.
 */
import { DEFAULT_GROUPS, type GroupWeight } from './states';
import { AGING_MIN_POSITIVE_SECONDS, LIMITS } from '../limits';
import { markPrepared, prepareOnce } from './prepared';
import { checkGroupName, checkInt, checkQueueName, checkSeconds, fn, idText, iso, type Queryable, type LedgerSchema } from './types';
import { InputError } from '../errors';
import { boundedQuery, type Bounds } from '../db/bounds';

export interface DequeueOptions {
	queue: string;
	/** Maximum number of tasks to claim (1 to 10,000). */
	limit: number;
	/** Lease (visibility timeout) in seconds (LIMITS.queueLeaseSeconds: 1 to 86,400; default 300). */
	leaseSeconds?: number;
	/** Groups with integer weights >= 1 (default high 5, normal 2, low 1); their order does not matter. Recorded for the queue: enqueue tags with them. */
	groups?: readonly GroupWeight[];
	/** Aging interval in seconds (LIMITS.agingSeconds): 0 switches aging off, else 0.001 to 31,536,000 (default 300). */
	agingSeconds?: number;
}

export interface ClaimedTask {
	/** Claim sequence number (bigint as a string): increasing in claim order, unique; may have gaps. */
	claimSeq: string;
	taskId: string;
	queue: string;
	group: string;
	/** The group whose share this claim used: the task's own group (aging moves a task, not a group). */
	servedAs: string;
	payload: unknown;
	dedupeKey: string | null;
	/** This claim's attempt number (1 for the first claim). */
	attempt: number;
	maxAttempts: number;
	/** The fencing token every settle call must present. */
	leaseToken: string;
	leaseExpiresAt: string;
	/** When the task became claimable (ISO-8601). */
	availableAt: string;
	enqueuedAt: string;
	/** The error of the previous attempt, if any. */
	lastError: string | null;
	/** Seconds between availableAt and this claim. */
	waitedSeconds: number;
}

interface Row {
	claim_seq: string;
	id: string;
	queue: string;
	priority_group: string;
	served_as: string;
	payload: unknown;
	dedupe_key: string | null;
	attempts: number;
	max_attempts: number;
	lease_token: string;
	lease_expires_at: Date;
	run_at: Date;
	enqueued_at: Date;
	last_error: string | null;
	waited_secs: number;
}

/** Validates groups: LIMITS.priorityGroups (1 to 20), distinct names, integer weights LIMITS.groupWeight (1 to 1000). Throws InputError. */
export function checkGroups(groups: readonly GroupWeight[]): GroupWeight[] {
	if (!Array.isArray(groups) || groups.length < LIMITS.priorityGroups.min || groups.length > LIMITS.priorityGroups.max)
		throw new InputError(`Give ${LIMITS.priorityGroups.min} to ${LIMITS.priorityGroups.max} priority groups`);
	const seen = new Set<string>();
	return groups.map((g) => {
		const name = checkGroupName(g.name);
		if (seen.has(name)) throw new InputError(`Priority group "${name}" is listed twice`);
		seen.add(name);
		const weight = checkInt(g.weight, `Weight of group "${name}"`, LIMITS.groupWeight);
		if (g.strict !== undefined && typeof g.strict !== 'boolean') throw new InputError(`Strict (Always First) of group "${name}" must be true or false`);
		return g.strict ? { name, weight, strict: true } : { name, weight };
	});
}

/**
 * Checks dequeue options (queue name; batch size, lease and aging within LIMITS (src/limits.ts):
 * batch 1 to 10,000; lease 1 to 86,400 s, default 300; aging 0 or 0.001 to 31,536,000 s, default 300; groups as checkGroups, default DEFAULT_GROUPS) and
 * returns them normalised, defaults filled in, prepared (prepared.ts). Throws InputError.
 */
export function prepareDequeueOptions(options: DequeueOptions): DequeueOptions {
	const queue = checkQueueName(options.queue);
	const limit = checkInt(options.limit, 'Batch size', LIMITS.dequeueBatchSize);
	const leaseSeconds = checkSeconds(options.leaseSeconds ?? LIMITS.queueLeaseSeconds.default, 'Lease', LIMITS.queueLeaseSeconds);
	const aging = checkSeconds(options.agingSeconds ?? LIMITS.agingSeconds.default, 'Aging interval', LIMITS.agingSeconds);
	// Below a millisecond the aging position (wait / interval) would leave the double range.
	if (aging > 0 && aging < AGING_MIN_POSITIVE_SECONDS) throw new InputError(`Aging interval must be 0 (off) or at least ${AGING_MIN_POSITIVE_SECONDS} seconds, got ${aging}`);
	const groups = checkGroups(options.groups ?? DEFAULT_GROUPS);
	return markPrepared<Required<DequeueOptions>>({ queue, limit, leaseSeconds, agingSeconds: aging, groups });
}

/**
 * Claims up to `limit` tasks of `queue` in one statement (schema/functions/queue/queue_claim.sql):
 * expired leases of the queue are swept first when there are any (back to pending, or dead at max
 * attempts); when no listed group has ready work it returns at once; otherwise it takes the first
 * `limit` ready tasks of the listed groups in fair-queuing tag order with FOR UPDATE SKIP LOCKED.
 * The tags are decided at enqueue (start-time fair queuing: a group's next tag is max(queue virtual
 * time, its last tag) + 1 / weight, see "Scheduling" in docs/queue.md), so concurrent claims of a
 * queue overlap and no claim locks a shared row. `groups`' weights are recorded for the queue when
 * they differ from the recorded ones and apply to tasks tagged afterwards. Aging: tasks of a listed
 * group that waited longer than `agingSeconds` are moved to the front (FIFO among themselves).
 * Strict groups (`strict: true`) go first: before the weighted claim, each strict group in list order
 * has its ready tasks claimed oldest first (run_at, id) for as much of the batch as they fill; the
 * weighted claim over the other groups takes the rest (docs/queue.md, "Strict priority").
 * Each claimed task gets attempts + 1, a fresh lease token and lease_expires_at = now + leaseSeconds.
 * Returns the tasks in claim order (possibly none). Throws InputError for bad options.
 *
 * `bounds` (when `db` is a pool; src/db/bounds.ts): the claim runs in a transaction of its own with
 * SET LOCAL statement_timeout / lock_timeout (default 30000 / 5000 ms), sent in one round trip. A
 * bound that fires throws LedgerBusyError and nothing was claimed. Only a claim whose transaction
 * was rolled back (40001, 40P01) is run again; a claim whose connection broke is never re-run, since
 * its COMMIT may have handed tasks out (they come back when their lease ends).
 */
export async function dequeue(db: Queryable, schema: LedgerSchema, options: DequeueOptions, bounds?: Bounds): Promise<ClaimedTask[]> {
	const st = claimStatement(schema, options);
	// Claiming again hands out other tasks; tasks a lost claim took come back when their lease ends.
	const rows = await boundedQuery<Row>(db, st.text, st.values, bounds, { repeatSafe: true });
	return rows.map(toClaimedTask);
}

/**
 * The claim statement for `options` (checked once and prepared: throws InputError as dequeue()
 * does), for dequeue() and for a claim sent together with a Complete (completeAndDequeue.ts).
 */
export function claimStatement(schema: LedgerSchema, options: DequeueOptions): { text: string; values: unknown[] } {
	const { queue, limit, leaseSeconds: lease, agingSeconds: aging, groups } = prepareOnce(options, prepareDequeueOptions) as Required<DequeueOptions>;
	return {
		text: `SELECT * FROM ${fn(schema, 'queue_claim')}($1, $2::text[], $3::integer[], $4, $5, $6, $7::text[])`,
		values: [queue, groups.map((g) => g.name), groups.map((g) => g.weight), limit, lease, aging, strictNames(groups)],
	};
}

/** The strict groups' names in list (rank) order, or null when no group is strict (the claim's fast path unchanged). */
function strictNames(groups: readonly GroupWeight[]): string[] | null {
	const names = groups.filter((g) => g.strict).map((g) => g.name);
	return names.length > 0 ? names : null;
}

export function toClaimedTask(r: Row): ClaimedTask {
	return {
		claimSeq: idText(r.claim_seq) as string,
		taskId: idText(r.id) as string,
		queue: r.queue,
		group: r.priority_group,
		servedAs: r.served_as,
		payload: r.payload,
		dedupeKey: r.dedupe_key,
		attempt: r.attempts,
		maxAttempts: r.max_attempts,
		leaseToken: r.lease_token,
		leaseExpiresAt: iso(r.lease_expires_at) as string,
		availableAt: iso(r.run_at) as string,
		enqueuedAt: iso(r.enqueued_at) as string,
		lastError: r.last_error,
		waitedSeconds: Number(r.waited_secs),
	};
}
