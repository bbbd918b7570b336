/**
 * Extend lease (heartbeat): the holder of a live lease pushes its expiry to now + N seconds.
 */
import { LIMITS } from '../limits';
import { markPrepared, prepareOnce } from './prepared';
import { baseResult, checkSettleTarget, inInputOrder, settleKey, type SettleResult, type SettleTarget, type SettleRow } from './settle';
import { checkSeconds, fn, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';

export interface ExtendLeaseInput extends SettleTarget {
	/** New lease length from now, seconds (LIMITS.queueLeaseSeconds: 1 to 86,400; default 300). */
	leaseSeconds?: number;
}

export interface ExtendLeaseResult extends SettleResult {
	/** The new expiry (ISO-8601) for extended; the current one otherwise, when processing. */
	leaseExpiresAt: string | null;
}

interface Row extends SettleRow {
	lease_expires_at: Date | null;
}

/** Checks one input (id, token, seconds); returns it normalised and prepared (prepared.ts). Throws InputError. */
export function prepareExtendLeaseInput(it: ExtendLeaseInput): ExtendLeaseInput {
	return markPrepared({ ...checkSettleTarget(it), leaseSeconds: checkSeconds(it.leaseSeconds ?? LIMITS.queueLeaseSeconds.default, 'Lease', LIMITS.queueLeaseSeconds) });
}

/**
 * Extends a batch of leases in one statement. An expired lease cannot be extended (lease_lost):
 * once expired, another consumer may already hold the task. Outcomes: extended | lease_lost |
 * not_found. Throws InputError for a malformed id, token or seconds. `bounds`: as in complete().
 */
export async function extendLease(db: Queryable, schema: LedgerSchema, items: ExtendLeaseInput[], bounds?: Bounds): Promise<ExtendLeaseResult[]> {
	if (items.length === 0) return [];
	const payload = items.map((it) => prepareOnce(it, prepareExtendLeaseInput)).map((it, i) => ({ i, ...settleKey(it), secs: it.leaseSeconds }));
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_extend_lease')}($1::jsonb)`, [JSON.stringify(payload)], bounds, {
		// Settling again with the same lease token answers already_settled or lease_lost.
		repeatSafe: true,
	});
	return inInputOrder(
		rows.map((r) => ({ ...baseResult(r), leaseExpiresAt: iso(r.lease_expires_at) })),
		items.length,
	);
}
