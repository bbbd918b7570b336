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

/** The last Date iso() formatted (its time in ms) and its text: the rows of one batch share a few timestamps (the transaction's now(), a lease end). */
let lastMs = Number.NaN;
let lastText = '';

/** Date or timestamp text (or null) → ISO-8601 string (or null). */
export function iso(value: Date | string | null | undefined): string | null {
	if (value === null || value === undefined) return null;
	const date = value instanceof Date ? value : new Date(value);
	const ms = date.getTime();
	// Same instant, same text (toISOString depends on the time value alone); an invalid date throws below as before.
	if (ms === lastMs) return lastText;
	const text = date.toISOString();
	lastMs = ms;
	lastText = text;
	return text;
}

/** int8 / numeric text (or null) → string (or null). */
export function idText(value: string | number | null | undefined): string | null {
	return value === null || value === undefined ? null : String(value);
}
