/**
 * Caps on what one call sends to Postgres, and internal chunking that keeps a batch's meaning.
 *
 * Postgres refuses a jsonb value over 255 MiB, and one huge parameter also holds that much memory
 * on both sides. So a batch is sent as one or more statements ("chunks"):
 *   - at most MAX_STATEMENT_ITEMS items and MAX_STATEMENT_BYTES bytes of JSON per statement;
 *   - items that share a key (the same operation key, or the same queue + dedupe key) always go
 *     into the same chunk, so in-batch duplicates are answered exactly as in one statement;
 *   - with a Pool, all chunks run in ONE transaction on one connection (BEGIN ... COMMIT): the batch
 *     stays all or nothing. With a client you pass yourself, the chunks run on it in order; wrap
 *     the call in your own BEGIN/COMMIT when a multi-chunk batch must be atomic.
 * A batch over MAX_BATCH_ITEMS items or MAX_BATCH_BYTES bytes is refused before anything is sent
 * (BatchTooLargeError); split it upstream (e.g. n8n's Loop Over Items).
 */
import type { PoolClient, QueryResultRow } from 'pg';
import { boundedQuery, boundedStatements, type Bounds, type CallOptions } from './bounds';
import { CoreError } from '../errors';

/** Items per statement. */
export const MAX_STATEMENT_ITEMS = 20_000;
/** Bytes of the JSON parameter per statement (UTF-8); jsonb's own limit is 255 MiB. */
export const MAX_STATEMENT_BYTES = 64 * 1024 * 1024;
/**
 * Largest single-chunk JSON (bytes, UTF-8) sent in ONE round trip with the transaction around it
 * (boundedQuery: `BEGIN; SET LOCAL …; <statement with literals>; COMMIT`). Larger batches go in
 * three or more round trips with the JSON as a parameter. The literal is quoted in time that grows
 * with its size alone (quoteLiteral, src/db/bounds.ts: well under 1 ms for 256 KiB; pg's
 * escapeLiteral, used before, took 27 ms for 253 KiB, which is why this bound was 64 KiB). 1 MiB
 * keeps batches of about 4,000 ordinary items in one round trip; a larger batch's own work (parse,
 * rows, JSON) outweighs the two round trips, and a failed statement's text, which the server may
 * log with log_min_error_statement, stays bounded.
 */
export const ONE_TRIP_MAX_BYTES = 1024 * 1024;
/** Items per call. */
export const MAX_BATCH_ITEMS = 1_000_000;
/** Bytes of JSON per call, over all chunks. */
export const MAX_BATCH_BYTES = 1024 * 1024 * 1024;

/** A batch over MAX_BATCH_ITEMS items or MAX_BATCH_BYTES bytes; nothing was sent. Not retryable: the batch must be split. */
export class BatchTooLargeError extends CoreError {
	readonly retryable = false;
	constructor(message: string) {
		super(message);
		this.name = 'BatchTooLargeError';
	}
}

type Queryable = Pick<PoolClient, 'query'>;


/**
 * Splits encoded items (each a JSON text) into chunks within the per-statement caps, keeping items
 * with the same key (keys[i], null for none) in one chunk. Returns arrays of item positions.
 */
export function planChunks(parts: readonly string[], keys: ReadonlyArray<string | null>, limits = { items: MAX_STATEMENT_ITEMS, bytes: MAX_STATEMENT_BYTES }): number[][] {
	if (parts.length > MAX_BATCH_ITEMS) throw new BatchTooLargeError(`The batch has ${parts.length} items; at most ${MAX_BATCH_ITEMS} are sent in one call. Split it into smaller batches.`);
	// The common case without a byte count per item: UTF-8 takes at most 3 bytes per UTF-16 code
	// unit, so when 3 × the characters (plus a comma each) fit the statement's byte cap, every
	// item fits one chunk, which is what the loop below would plan too (all in order, keys together).
	if (parts.length <= limits.items) {
		let units = 0;
		for (const p of parts) units += p.length;
		if (3 * units + parts.length <= Math.min(limits.bytes, MAX_BATCH_BYTES)) return parts.length === 0 ? [] : [parts.map((_, i) => i)];
	}
	let total = 0;
	const sizes = parts.map((p) => Buffer.byteLength(p, 'utf8') + 1);
	for (const s of sizes) total += s;
	if (total > MAX_BATCH_BYTES) throw new BatchTooLargeError(`The batch is ${total} bytes as JSON; at most ${MAX_BATCH_BYTES} are sent in one call. Split it into smaller batches.`);
	const chunks: Array<{ items: number[]; bytes: number }> = [];
	const chunkOfKey = new Map<string, number>();
	let current = -1;
	parts.forEach((_, i) => {
		const key = keys[i];
		const owner = key === null ? undefined : chunkOfKey.get(key);
		if (owner !== undefined) {
			// Same key as an earlier item: same chunk (it may run over the soft caps by these items).
			chunks[owner].items.push(i);
			chunks[owner].bytes += sizes[i];
			return;
		}
		if (current < 0 || chunks[current].items.length >= limits.items || chunks[current].bytes + sizes[i] > limits.bytes) {
			chunks.push({ items: [], bytes: 0 });
			current = chunks.length - 1;
		}
		chunks[current].items.push(i);
		chunks[current].bytes += sizes[i];
		if (key !== null) chunkOfKey.set(key, current);
	});
	return chunks.map((c) => c.items);
}

/**
 * Runs `sql` (whose first parameter is the JSON array of items) once per chunk and returns all
 * rows. With a Pool, every chunk runs in ONE transaction bounded by `bounds` (statement and lock
 * timeouts, serialization retries: src/db/bounds.ts); with a client you pass yourself, the chunks
 * run on it in order, in your transaction and with your settings. A batch that fits one chunk of at
 * most ONE_TRIP_MAX_BYTES (every node call of ordinary size) costs ONE round trip with a Pool
 * (boundedQuery); before, it always cost three (BEGIN, the statement, COMMIT). `options`: how a
 * lost connection is classified (src/db/bounds.ts CallOptions; `repeatSafe` per item in item order).
 */
export async function queryChunked<R extends QueryResultRow>(
	db: Queryable,
	sql: string,
	parts: readonly string[],
	keys: ReadonlyArray<string | null>,
	rest: unknown[] = [],
	bounds?: Bounds,
	options: CallOptions = {},
): Promise<R[]> {
	const chunks = planChunks(parts, keys);
	// One chunk of every item is always in item order (planChunks): join the parts as they are.
	const json = (c: number[]) => `[${(c.length === parts.length ? parts : c.map((i) => parts[i])).join(',')}]`;
	const valueSets = (chunks.length === 0 ? [[]] : chunks).map((c) => [json(c), ...rest]);
	const oneTrip = (text: string) => 3 * text.length <= ONE_TRIP_MAX_BYTES || Buffer.byteLength(text, 'utf8') <= ONE_TRIP_MAX_BYTES;
	if (valueSets.length === 1 && oneTrip(valueSets[0][0] as string)) {
		return boundedQuery<R>(db as Parameters<typeof boundedQuery>[0], sql, valueSets[0], bounds, options);
	}
	return boundedStatements<R>(db as Parameters<typeof boundedStatements>[0], sql, valueSets, bounds, options);
}
