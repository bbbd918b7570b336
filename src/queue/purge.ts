/**
 * Retention: keep finished tasks out of the hot table. Succeeded tasks leave it when they complete
 * (they move to queue_tasks_archive); purge moves old dead tasks there too and deletes old archive rows.
 */
import { markPrepared, prepareOnce } from './prepared';
import { checkInt, checkQueueName, checkSeconds, fn, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { LIMITS } from '../limits';

export interface PurgeOptions {
	/** Only this queue; omit for every queue in the schema. */
	queue?: string | null;
	/** Dead tasks dead for longer than this move to the archive, seconds; null/undefined: keep them. */
	deadAfterSeconds?: number | null;
	/** Archive rows older than this (since archived) are deleted, seconds; null/undefined: keep them. */
	archiveAfterSeconds?: number | null;
	/** At most this many rows per step (1 to 100,000; default 10,000). */
	limit?: number;
}

export interface PurgeResult {
	deadArchived: number;
	archiveDeleted: number;
}

/**
 * Checks purge options (an empty or blank queue means every queue; retentions 0 to 3,153,600,000 s
 * or null; limit 1 to 100,000, default 10,000) and returns them normalised, prepared (prepared.ts).
 * Throws InputError.
 */
export function preparePurgeOptions(options: PurgeOptions): PurgeOptions {
	const q = typeof options.queue === 'string' ? options.queue.trim() : options.queue;
	return markPrepared({
		queue: q ? checkQueueName(q) : null,
		deadAfterSeconds: options.deadAfterSeconds == null ? null : checkSeconds(options.deadAfterSeconds, 'Dead retention', LIMITS.purgeRetentionSeconds),
		archiveAfterSeconds:
			options.archiveAfterSeconds == null ? null : checkSeconds(options.archiveAfterSeconds, 'Archive retention', LIMITS.purgeRetentionSeconds),
		limit: checkInt(options.limit ?? LIMITS.purgeLimit.default, 'Purge limit', LIMITS.purgeLimit),
	});
}

/**
 * Runs one bounded retention pass in one statement. Throws InputError for bad options.
 * `bounds`: statement and lock timeouts when `db` is a pool (src/db/bounds.ts); a bound that fires
 * throws LedgerBusyError and nothing was moved or deleted.
 */
export async function purge(db: Queryable, schema: LedgerSchema, options: PurgeOptions, bounds?: Bounds): Promise<PurgeResult> {
	const { queue, deadAfterSeconds: dead, archiveAfterSeconds: archive, limit } = prepareOnce(options, preparePurgeOptions);
	const rows = await boundedQuery<{ dead_archived: number; archive_deleted: number }>(
		db,
		`SELECT * FROM ${fn(schema, 'queue_purge')}($1, $2, $3, $4)`,
		[queue, dead, archive, limit],
		bounds,
	);
	return { deadArchived: rows[0]?.dead_archived ?? 0, archiveDeleted: rows[0]?.archive_deleted ?? 0 };
}
