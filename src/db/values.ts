/**
 * How the core talks to pg and reads its rows, the same for the ledger and the queue:
 * - `Queryable`: a pg Pool or a checked-out PoolClient (pass a client to run inside your own
 *   transaction);
 * - timestamptz values (Dates with pg's default parser) become ISO-8601 strings;
 * - bigint (int8) and numeric values stay decimal strings (pg's default for int8).
 */
import type { Pool, PoolClient } from 'pg';

/** Anything with pg's `query`: a Pool or a PoolClient. */
export type Queryable = Pick<Pool | PoolClient, 'query'>;

/**
 * The last ISO_CACHE_SIZE instants iso() formatted (their times in ms) and their texts, replaced in
 * turn: the rows of one batch share a few timestamps (the transaction's now() as created and
 * updated, the lease end), so most rows find theirs here.
 */
const ISO_CACHE_SIZE = 4;
const cachedMs: number[] = new Array<number>(ISO_CACHE_SIZE).fill(Number.NaN);
const cachedText: string[] = new Array<string>(ISO_CACHE_SIZE).fill('');
let nextSlot = 0;

/** Date or timestamp text (or null) → ISO-8601 string (or null). */
export function iso(value: Date | string | null | undefined): string | null {
	if (value === null || value === undefined) return null;
	const date = value instanceof Date ? value : new Date(value);
	const ms = date.getTime();
	// Same instant, same text (toISOString depends on the time value alone); NaN never matches, so
	// an invalid date throws below as before.
	for (let k = 0; k < ISO_CACHE_SIZE; k++) if (cachedMs[k] === ms) return cachedText[k];
	const text = date.toISOString();
	cachedMs[nextSlot] = ms;
	cachedText[nextSlot] = text;
	nextSlot = (nextSlot + 1) % ISO_CACHE_SIZE;
	return text;
}

/** int8 / numeric text (or null) → string (or null). */
export function idText(value: string | number | null | undefined): string | null {
	return value === null || value === undefined ? null : String(value);
}
