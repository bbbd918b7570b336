/**
 * Resume: ends a pause of a queue or of one of its priority groups (pause.ts), with a reason and
 * who asked; the queue's triggers are notified at once. A group's tasks are tagged again from the
 * queue's virtual time of the resume, so it takes its weighted share from then on, no burst
 * (docs/queue.md, "Pause and resume"). SQL: queue_resume.
 */
import type { ResumeOutcome } from './states';
import { pauseParams, pauseStatement, preparePauseInput, type PauseInput } from './pause';
import { prepareOnce } from './prepared';
import { fn, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';

export interface ResumeResult {
	queue: string;
	/** The resumed group, or null for the whole queue. */
	group: string | null;
	/** resumed (the pause ended now) | not_paused (no pause of exactly that queue or group was in force). */
	outcome: ResumeOutcome;
	/** The pause that ended: since when and by whom (null for not_paused). */
	pausedAt: string | null;
	pausedBy: string | null;
	/** When it ended (ISO-8601, the queue clock; null for not_paused). */
	resumedAt: string | null;
	/** Pending tasks of the group waiting to be tagged again by its next claim; 0 for a queue. */
	untagged: number;
}

interface Row {
	i: number;
	outcome: ResumeOutcome;
	queue: string;
	priority_group: string | null;
	paused_at: Date | null;
	paused_by: string | null;
	resumed_at: Date | null;
	untagged: number;
}

/**
 * Resumes a batch in one round trip (queue_resume per item). Results in input order. Sending it
 * again after a lost COMMIT answers not_paused for what the first call resumed (the state is the
 * same either way), so it is treated as repeat-safe. Throws InputError for a malformed item (before
 * any write; the same checks as Pause, preparePauseInput); LedgerBusyError when a bound fires.
 */
export async function resume(db: Queryable, schema: LedgerSchema, items: PauseInput[], bounds?: Bounds): Promise<ResumeResult[]> {
	if (items.length === 0) return [];
	const prepared = items.map((it) => prepareOnce(it, preparePauseInput));
	const rows = await boundedQuery<Row>(db, pauseStatement(fn(schema, 'queue_resume')), pauseParams(prepared), bounds, { repeatSafe: true });
	const out: ResumeResult[] = new Array(items.length);
	for (const r of rows)
		out[r.i] = { queue: r.queue, group: r.priority_group, outcome: r.outcome, pausedAt: iso(r.paused_at), pausedBy: r.paused_by, resumedAt: iso(r.resumed_at), untagged: Number(r.untagged) };
	return out;
}
