/**
 * Operation Ledger Admin → Retention: compaction of settled operations (their events deleted, the
 * key and its outcome kept), or hard delete as an explicit, acknowledged choice, in batches
 * (schema/functions/ledger/ops_compact_batch.sql, ops_hard_delete_batch.sql; docs/operations.md).
 * Each batch is its own transaction with its own statement and lock timeouts; the report counts
 * exactly the batches that committed.
 */
import type { Pool, PoolClient } from 'pg';
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { DEFAULTS, isLostConnection } from '../../db/bounds';
import { checkedOut } from '../../db/checkout';
import { WrappingError } from '../../db/driverError';
import { InputError } from '../../errors';
import { cutAny } from '../../text';
import { eventContextJson, type EventContext } from '../states';
import { checkWholeNumber } from '../wholeNumber';
import { LIMITS } from '../../limits';

/** The text ops_hard_delete_batch requires, stating the consequence. */
export const HARD_DELETE_ACKNOWLEDGEMENT = 'forget these keys: a retry will run the write again';


export interface RetentionOptions {
	mode: 'compact' | 'hard_delete';
	/** Only operations settled more than this many days ago (1..36500). */
	olderThanDays: number;
	/** Operations per batch, i.e. per statement and transaction (1..10000). */
	batchSize: number;
	/** Stop after this many batches (1..100000). */
	maxBatches: number;
	/** Start no new batch after this many milliseconds (1000..3600000). */
	maxDurationMs: number;
	/** statement_timeout and lock_timeout of each batch, in milliseconds (100..600000). */
	statementTimeoutMs: number;
}

/** Validates retention options. Hard delete also needs the acknowledgement text. Throws InputError. */
export function checkRetentionOptions(o: {
	mode: unknown;
	olderThanDays: unknown;
	batchSize?: unknown;
	maxBatches?: unknown;
	maxDurationMs?: unknown;
	statementTimeoutMs?: unknown;
	acknowledge?: unknown;
}): RetentionOptions {
	if (o.mode !== 'compact' && o.mode !== 'hard_delete') throw new InputError(`The retention mode must be compact or hard_delete; got ${cutAny(o.mode, 40)}`);
	if (o.mode === 'hard_delete' && o.acknowledge !== true) {
		throw new InputError(
			'Hard delete needs the explicit acknowledgement: the ledger forgets the deleted keys, and a retry of one of them runs its write again',
		);
	}
	return {
		mode: o.mode,
		olderThanDays: checkWholeNumber(o.olderThanDays, 'Older than (days)', LIMITS.retentionOlderThanDays),
		batchSize: checkWholeNumber(o.batchSize ?? LIMITS.retentionBatchSize.default, 'The batch size', LIMITS.retentionBatchSize),
		maxBatches: checkWholeNumber(o.maxBatches ?? LIMITS.retentionMaxBatches.default, 'Max batches', LIMITS.retentionMaxBatches),
		maxDurationMs: checkWholeNumber(o.maxDurationMs ?? LIMITS.retentionMaxDurationMs.default, 'Max duration (ms)', LIMITS.retentionMaxDurationMs),
		statementTimeoutMs: checkWholeNumber(o.statementTimeoutMs ?? LIMITS.retentionStatementTimeoutMs.default, 'The statement timeout (ms)', LIMITS.retentionStatementTimeoutMs),
	};
}

export interface RetentionReport {
	mode: RetentionOptions['mode'];
	/** Batches that committed. */
	batches: number;
	/** Operations compacted or deleted by committed batches. */
	operations: number;
	/** Events deleted by committed batches. */
	eventsDeleted: number;
	/** done: nothing eligible is left; max_batches / max_duration: more may be left. */
	stoppedBecause: 'done' | 'max_batches' | 'max_duration';
	durationMs: number;
}

/** Raised when a batch fails; `report` says what the batches before it committed. */
export class RetentionError extends WrappingError {
	constructor(
		message: string,
		public readonly report: RetentionReport,
		public readonly cause?: unknown,
		/** True when the failed batch's COMMIT was on its way when the connection was lost: it may have committed. */
		public readonly outcomeUnknown = false,
	) {
		super(message);
		this.name = 'RetentionError';
	}
}

/**
 * Runs compaction or hard delete in batches, each its own transaction with SET LOCAL
 * statement_timeout and lock_timeout, until a batch finds fewer than batchSize operations, or
 * maxBatches batches ran, or maxDurationMs passed (checked before each batch: the last batch can
 * run at most statementTimeoutMs past it). Rows a concurrent Reserve or Confirm holds are skipped
 * (SKIP LOCKED), never waited for. A failing batch is rolled back and raised as RetentionError
 * carrying the committed batches' report (outcomeUnknown: the connection was lost during the failed
 * batch's COMMIT, so that batch may have committed too). Each round trip is bounded by the client as
 * well: statementTimeoutMs + DEFAULTS.deadlineMarginMs, then the connection is destroyed.
 */
export async function runRetention(pool: Pick<Pool, 'connect'>, schema: LedgerSchema, o: RetentionOptions, ctx: EventContext = {}): Promise<RetentionReport> {
	const started = Date.now();
	const report: RetentionReport = { mode: o.mode, batches: 0, operations: 0, eventsDeleted: 0, stoppedBecause: 'done', durationMs: 0 };
	const sql =
		o.mode === 'compact'
			? `SELECT compacted AS n, events_deleted FROM ${sqlFunction(schema, 'ops_compact_batch')}($1, $2, $3::jsonb)`
			: `SELECT deleted AS n, events_deleted FROM ${sqlFunction(schema, 'ops_hard_delete_batch')}($1, $2, $4, $3::jsonb)`;
	const params: unknown[] = [o.olderThanDays, o.batchSize, eventContextJson(ctx)];
	if (o.mode === 'hard_delete') params.push(HARD_DELETE_ACKNOWLEDGEMENT);
	// Each round trip bounded by the client as well (src/db/deadline.ts): the batch's statement
	// timeout plus the margin; when it passes the connection is destroyed.
	await checkedOut(pool as { connect(): Promise<PoolClient> }, o.statementTimeoutMs + DEFAULTS.deadlineMarginMs, async (client, markBroken) => {
		for (;;) {
			if (report.batches >= o.maxBatches) {
				report.stoppedBecause = 'max_batches';
				break;
			}
			if (Date.now() - started >= o.maxDurationMs) {
				report.stoppedBecause = 'max_duration';
				break;
			}
			let n: number;
			let ev: number;
			let commitSent = false;
			try {
				await client.query('BEGIN');
				await client.query(`SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)`, [String(o.statementTimeoutMs)]);
				const { rows } = await client.query<{ n: number; events_deleted: string }>(sql, params);
				commitSent = true;
				await client.query('COMMIT');
				n = rows[0].n;
				ev = Number(rows[0].events_deleted);
			} catch (e) {
				const lost = isLostConnection(e);
				if (lost) markBroken(e as Error);
				else
					await client.query('ROLLBACK').catch((re: Error) => {
						markBroken(re);
					});
				report.durationMs = Date.now() - started;
				const what = `${o.mode === 'compact' ? 'Compaction' : 'Hard delete'} batch ${report.batches + 1}`;
				const fate = !lost
					? 'failed and was rolled back'
					: commitSent
						? 'may have committed or not: the connection was lost while its COMMIT was on its way'
						: 'failed and was rolled back (the connection was lost before its COMMIT)';
				throw new RetentionError(
					`${what} ${fate}: ${(e as Error).message}. ` +
						`${report.batches} earlier batch(es) committed (${report.operations} operation(s), ${report.eventsDeleted} event(s)).`,
					{ ...report },
					e,
					lost && commitSent,
				);
			}
			report.batches++;
			report.operations += n;
			report.eventsDeleted += ev;
			if (n < o.batchSize) break;
		}
	});
	report.durationMs = Date.now() - started;
	return report;
}
