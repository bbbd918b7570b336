/**
 * Release: the holder of a live lease gives the task back without failing it.
 */
import { markPrepared, prepareOnce } from './prepared';
import { baseResult, checkSettleTarget, inInputOrder, settleKey, type SettleResult, type SettleTarget, type SettleRow } from './settle';
import { checkSeconds, fn, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { LIMITS } from '../limits';

export interface ReleaseInput extends SettleTarget {
	/** Seconds before it may be claimed again; 0 (default) keeps its place at the head of its group. */
	delaySeconds?: number;
	/** Count this claim as an attempt (default false: attempts go back by one). */
	countAttempt?: boolean;
}

export interface ReleaseResult extends SettleResult {
	attempts: number | null;
	/** When it may be claimed again (ISO-8601), for released. */
	availableAt: string | null;
}

interface Row extends SettleRow {
	attempts: number | null;
	run_at: Date | null;
}

/** Checks one input (id, token, delay); returns it normalised and prepared (prepared.ts). Throws InputError. */
export function prepareReleaseInput(it: ReleaseInput): ReleaseInput {
	return markPrepared({
		...checkSettleTarget(it),
		delaySeconds: checkSeconds(it.delaySeconds ?? LIMITS.releaseDelaySeconds.default, 'Release delay', LIMITS.releaseDelaySeconds),
		countAttempt: it.countAttempt === true,
	});
}

/**
 * Releases a batch in one statement. Outcomes: released | already_settled | lease_lost | not_found.
 * Throws InputError for a malformed id, token or delay. `bounds`: as in complete().
 */
export async function release(db: Queryable, schema: LedgerSchema, items: ReleaseInput[], bounds?: Bounds): Promise<ReleaseResult[]> {
	if (items.length === 0) return [];
	const payload = items
		.map((it) => prepareOnce(it, prepareReleaseInput))
		.map((it, i) => ({ i, ...settleKey(it), delay: it.delaySeconds, count: it.countAttempt }));
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_release')}($1::jsonb)`, [JSON.stringify(payload)], bounds, {
		// Settling again with the same lease token answers already_settled or lease_lost.
		repeatSafe: true,
	});
	return inInputOrder(
		rows.map((r) => ({ ...baseResult(r), attempts: r.attempts, availableAt: iso(r.run_at) })),
		items.length,
	);
}
