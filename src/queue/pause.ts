/**
 * Pause: an operator (or a workflow acting for one) stops the claims of a queue, or of one priority
 * group of it, with a reason and who asked; Resume (resume.ts) ends it. While paused, claims take
 * nothing of it, enqueues are taken, the trigger starts no execution for it and leases already
 * held keep working (docs/queue.md, "Pause and resume"). SQL: queue_pause.
 */
import type { PauseOutcome } from './states';
import { markPrepared, prepareOnce } from './prepared';
import { checkGroupName, checkQueueName, fn, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { TEXT_LIMITS } from '../limits';
import { storableText } from '../text';

/** What Pause and Resume take, one per input item. */
export interface PauseInput {
	/** The queue. */
	queue: string;
	/** One priority group of it; null, undefined or '' = the whole queue. */
	group?: string | null;
	/** Why (recorded; made storable and cut on a code-point boundary to TEXT_LIMITS.maxPauseReasonLength, 2,000 UTF-16 units; null when empty). */
	reason?: string | null;
	/** Who asked (recorded; cut to TEXT_LIMITS.maxPausedByLength, 60 units; null when empty). */
	by?: string | null;
}

export interface PauseResult {
	queue: string;
	/** The paused group, or null for the whole queue. */
	group: string | null;
	/** paused (recorded now) | already_paused (the pause in force was kept, with its first time, reason and who). */
	outcome: PauseOutcome;
	/** The pause in force: since when (ISO-8601, the queue clock), by whom, why. */
	pausedAt: string | null;
	pausedBy: string | null;
	reason: string | null;
	/** Pending tasks of the group whose fair-queuing tags were taken off (re-tagged after Resume); 0 for a queue. */
	untagged: number;
}

interface Row {
	outcome: PauseOutcome;
	queue: string;
	priority_group: string | null;
	paused_at: Date | null;
	paused_by: string | null;
	reason: string | null;
	untagged: number;
}

/**
 * Checks one Pause or Resume input: a queue name (checkQueueName), a group name when given
 * (checkGroupName; empty = the whole queue); the reason and who made storable and cut to
 * TEXT_LIMITS (never refused). Returns it normalised and prepared (prepared.ts). Throws InputError.
 */
export function preparePauseInput(it: PauseInput): PauseInput {
	const queue = checkQueueName(it.queue);
	const group = it.group === undefined || it.group === null || it.group === '' ? null : checkGroupName(it.group);
	const reason = storableText(String(it.reason ?? ''), TEXT_LIMITS.maxPauseReasonLength).trim() || null;
	const by = storableText(String(it.by ?? ''), TEXT_LIMITS.maxPausedByLength).trim() || null;
	return markPrepared({ queue, group, reason, by });
}

/**
 * The one statement Pause and Resume send: `func` (the quoted queue_pause or queue_resume, each
 * operation naming its own) called for each item in (queue, group, item) order, so two batches take
 * the queues' pause locks in the same order.
 */
export function pauseStatement(func: string): string {
	return `SELECT x.i, r.* FROM (SELECT * FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(i, q, g, reason, who)
	                               ORDER BY u.q, u.g NULLS FIRST, u.i) x
	         CROSS JOIN LATERAL ${func}(x.q, x.g, x.reason, x.who) r`;
}

/** The statement's parameters for prepared `items`. */
export function pauseParams(items: PauseInput[]): unknown[] {
	return [items.map((_, i) => i), items.map((it) => it.queue), items.map((it) => it.group ?? null), items.map((it) => it.reason ?? null), items.map((it) => it.by ?? null)];
}

/**
 * Pauses a batch in one round trip (queue_pause per item; see there for what a pause holds back and
 * how it is ordered against claims in flight: each waits for the claims of its queue to commit,
 * bounded by the credential's lock timeout, LedgerBusyError when it fires, nothing paused).
 * Results in input order. Sending it again is answered from what was recorded (already_paused), so
 * a lost COMMIT is repeat-safe. Throws InputError for a malformed item (before any write).
 */
export async function pause(db: Queryable, schema: LedgerSchema, items: PauseInput[], bounds?: Bounds): Promise<PauseResult[]> {
	if (items.length === 0) return [];
	const prepared = items.map((it) => prepareOnce(it, preparePauseInput));
	const rows = await boundedQuery<Row & { i: number }>(db, pauseStatement(fn(schema, 'queue_pause')), pauseParams(prepared), bounds, { repeatSafe: true });
	const out: PauseResult[] = new Array(items.length);
	for (const r of rows)
		out[r.i] = { queue: r.queue, group: r.priority_group, outcome: r.outcome, pausedAt: iso(r.paused_at), pausedBy: r.paused_by, reason: r.reason, untagged: Number(r.untagged) };
	return out;
}
