/**
 * Complete: the holder of a live lease reports success; the task moves to the archive as succeeded.
 */
import { markPrepared, prepareOnce } from './prepared';
import { baseResult, checkSettleTarget, inInputOrder, settleKey, type SettleResult, type SettleTarget, type SettleRow } from './settle';
import { fn, iso, type Queryable } from './types';

export interface CompleteInput extends SettleTarget {
	/** Optional JSON result kept with the archived task. */
	result?: unknown;
}

export interface CompleteResult extends SettleResult {
	attempts: number | null;
	/** When the task succeeded (ISO-8601), for completed and already_settled. */
	finishedAt: string | null;
}

interface Row extends SettleRow {
	attempts: number | null;
	finished_at: Date | null;
}

/** Checks one input (id, token); returns it normalised and prepared (prepared.ts). Throws QueueInputError. */
export function prepareCompleteInput(it: CompleteInput): CompleteInput {
	return markPrepared({ ...checkSettleTarget(it), result: it.result });
}

/**
 * Completes a batch in one statement (set-based: one DELETE … RETURNING into the archive for the
 * first item of every task id; only the items it did not complete are looked at one by one).
 * Outcomes per item: completed | already_settled (this token
 * already completed it) | lease_lost (expired or another holder: nothing changed) | not_found.
 * Results in input order. Throws QueueInputError for a malformed id or token (before any write).
 */
export async function complete(db: Queryable, schema: string, items: CompleteInput[]): Promise<CompleteResult[]> {
	if (items.length === 0) return [];
	const payload = items
		.map((it) => prepareOnce(it, prepareCompleteInput))
		.map((it, i) => ({ i, ...settleKey(it), res: it.result === undefined ? null : it.result }));
	const { rows } = await db.query<Row>(`SELECT * FROM ${fn(schema, 'queue_complete')}($1::jsonb)`, [JSON.stringify(payload)]);
	return inInputOrder(
		rows.map((r) => ({ ...baseResult(r), attempts: r.attempts, finishedAt: iso(r.finished_at) })),
		items.length,
	);
}
