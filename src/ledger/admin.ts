/**
 * Operator tools for the ledger: look an operation up with its history, list what needs a person,
 * settle an unknown or review operation by hand, read the ledger's health, and retention
 * (compaction, and hard delete as an explicit choice). The SQL is in
 * schema/functions/ledger/ops_*.sql; docs/operations.md explains each tool and its grants.
 *
 * Every statement is bounded: Get, List, Health and Settle by Hand run through boundedQuery (the
 * credential's statement and lock timeouts, default 30 s and 5 s); retention sets its own per batch.
 *
 * Safety: settling by hand and retention change what later Reserves answer. A decision is only
 * reported as settled when the database made it in this call (result "settled"); retention
 * reports exactly the batches that committed.
 */
import { resultsByItem } from './rows';
import { sqlFunction } from '../db/identifiers';
import { InputError } from '../errors';
import { cutAny } from '../text';
import type { Pool, PoolClient } from 'pg';
import { boundedQuery, DEFAULTS, isLostConnection, type Bounds } from '../db/bounds';
import { checkedOut } from '../db/checkout';
import { WrappingError } from '../db/driverError';
import type { Queryable } from '../db/values';
import { assessReplication, readReplication, type ReplicationReport } from '../db/replication';
import { eventContextJson, LIMITS, type EventContext, type OperationStatus } from './states';
import { checkOperationKey, checkOptionalText } from './validate';

/** What "List" can look for. */
export const LIST_KINDS = ['unknown', 'review', 'expired_lease', 'failed', 'possible_duplicate'] as const;
export type ListKind = (typeof LIST_KINDS)[number];

/** A person's verdict on an operation whose outcome is unknown. */
export const SETTLE_DECISIONS = ['happened', 'not_happened'] as const;
export type SettleDecision = (typeof SETTLE_DECISIONS)[number];

/** The text ops_hard_delete_batch requires, stating the consequence. */
export const HARD_DELETE_ACKNOWLEDGEMENT = 'forget these keys: a retry will run the write again';

function checkInt(value: unknown, what: string, min: number, max: number): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
		throw new InputError(`${what} must be a whole number from ${min} to ${max}; got ${cutAny(value, 40)}`);
	}
	return n;
}

// ---------------------------------------------------------------------------------------------
// Get

/** One event of an operation's history. `at` is ISO-8601 from the database clock. */
export interface LedgerEvent {
	eventId: string;
	event: string;
	fromStatus: OperationStatus | null;
	toStatus: OperationStatus | null;
	attempt: number | null;
	executionId: string | null;
	workflowId: string | null;
	nodeName: string | null;
	itemIndex: number | null;
	/**
	 * The database login role of the session that wrote the event (session_user): what the database
	 * knows, whereas executionId, workflowId, nodeName (and a decision's decidedBy) are what the
	 * caller said. Null for events written before migration 0012.
	 */
	dbRole: string | null;
	detail: unknown;
	at: string;
}

/** An operation with its history (oldest event first). Row fields keep the table's column names. */
export interface OperationWithHistory {
	operation: Record<string, unknown>;
	events: LedgerEvent[];
	/** Events stored for this key; more than events.length when maxEvents cut the oldest off. */
	eventsTotal: number;
}

/**
 * Reads one operation by key with its newest `maxEvents` events (1..10000), in order. Returns
 * null when no operation has the key. Throws InputError for a bad key.
 */
export async function getOperation(
	db: Queryable,
	schema: string,
	key: unknown,
	maxEvents: unknown = 500,
	bounds?: Bounds,
): Promise<OperationWithHistory | null> {
	const k = checkOperationKey(key);
	const max = checkInt(maxEvents, 'Max events', 1, 10000);
	const rows = await boundedQuery<{ r: OperationWithHistory | null }>(db, `SELECT ${sqlFunction(schema, 'ops_get_operation')}($1, $2) AS r`, [k, max], bounds, { readOnly: true });
	const r = rows[0]?.r ?? null;
	if (r) r.eventsTotal = Number(r.eventsTotal);
	return r;
}

// ---------------------------------------------------------------------------------------------
// List

export interface ListOptions {
	kind: ListKind;
	/** Only operations at least this many seconds old (0..10 years). */
	minAgeSeconds: number;
	/** Only this target; null for all. */
	target: string | null;
	/** Page size (1..1000). */
	limit: number;
	/** The `nextCursor` of the previous page, or null for the first page. */
	cursor: string | null;
}

export interface ListPage {
	/** Operations matching kind, age and target, on all pages. */
	total: number;
	/** This page, oldest first; each row without tokens and bodies, plus `ageSince`. */
	items: Array<Record<string, unknown>>;
	/** Pass as `cursor` for the next page; null on the last page. */
	nextCursor: string | null;
}

/** Validates list options. Throws InputError. */
export function checkListOptions(o: { kind: unknown; minAgeSeconds?: unknown; target?: unknown; limit?: unknown; cursor?: unknown }): ListOptions {
	if (!LIST_KINDS.includes(o.kind as ListKind)) {
		throw new InputError(`The list must be one of ${LIST_KINDS.join(', ')}; got ${cutAny(JSON.stringify(o.kind) ?? String(o.kind), 40)}`);
	}
	const cursor = o.cursor === undefined || o.cursor === null || o.cursor === '' ? null : String(o.cursor);
	if (cursor !== null) decodeCursor(cursor);
	return {
		kind: o.kind as ListKind,
		minAgeSeconds: checkInt(o.minAgeSeconds ?? 0, 'The minimum age (seconds)', 0, 10 * 366 * 86400),
		target: checkOptionalText(o.target, 'The target', LIMITS.maxTargetLength),
		limit: checkInt(o.limit ?? 50, 'The page size', 1, 1000),
		cursor,
	};
}

/** A cursor's timestamp: what jsonb_build_object writes for a timestamptz (microseconds, offset). */
const CURSOR_AT = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?([+-][0-9]{2}(:[0-9]{2})?|Z)$/;

/** Cursor: base64url of {"at": timestamp text with microseconds, "key": operation key}. */
function encodeCursor(next: { at: string; key: string }): string {
	return Buffer.from(JSON.stringify([next.at, next.key]), 'utf8').toString('base64url');
}
function decodeCursor(cursor: string): { at: string; key: string } {
	try {
		const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
		// Only what this node returns: a timestamptz as jsonb writes it (four-digit year, so
		// Postgres can read it back) and a valid operation key; anything else would fail in SQL.
		if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && CURSOR_AT.test(v[0]) && !Number.isNaN(Date.parse(v[0]))) {
			return { at: v[0], key: checkOperationKey(v[1]) };
		}
	} catch {
		// fall through
	}
	throw new InputError('The cursor is not one this node returned (use the "nextCursor" of the previous page, or leave it empty)');
}

/** One page of operations of `kind`, oldest first (one round trip). */
export async function listOperations(db: Queryable, schema: string, o: ListOptions, bounds?: Bounds): Promise<ListPage> {
	const after = o.cursor ? decodeCursor(o.cursor) : null;
	const rows = await boundedQuery<{ r: { total: number | string; items: Array<Record<string, unknown>>; next: { at: string; key: string } | null } }>(
		db,
		`SELECT ${sqlFunction(schema, 'ops_list_operations')}($1, $2, $3, $4, $5::timestamptz, $6) AS r`,
		[o.kind, o.minAgeSeconds, o.target, o.limit, after?.at ?? null, after?.key ?? null],
		bounds,
		{ readOnly: true },
	);
	const r = rows[0].r;
	return { total: Number(r.total), items: r.items, nextCursor: r.next ? encodeCursor(r.next) : null };
}

// ---------------------------------------------------------------------------------------------
// Settle by hand

export interface SettleItem {
	index: number;
	operationKey: string;
	decision: SettleDecision;
	externalRef: string | null;
	reason: string;
	decidedBy: string;
	/**
	 * Decide "not_happened" before the operation's settle window ends (an override, recorded in the
	 * event as beforeSettleWindowEnd). Without it such a decision is refused (refused_early).
	 */
	beforeSettleWindowEnd: boolean;
}

/**
 * settled: this call decided. refused: already settled (decidedBy names by whom). refused_early:
 * "not_happened" while the operation's settle window runs (settleUntil says until when), without
 * the override; nothing changed.
 */
export type SettleResult = 'settled' | 'refused' | 'refused_early' | 'not_found';

export interface SettleResultRow {
	index: number;
	result: SettleResult;
	status: OperationStatus | null;
	attempt: number | null;
	externalRef: string | null;
	retryable: boolean | null;
	/** The person (or "node X in execution Y") whose decision stands. */
	decidedBy: string | null;
	decidedAt: string | null;
	/** happened / not_happened for a person's decision, else the event that settled it. */
	decision: string | null;
	/** For refused_early: when the operation's settle window ends (ISO-8601, database clock). */
	settleUntil: string | null;
}

/**
 * Validates one decision. Throws InputError before anything is written: the key, who
 * decides (1..200 characters), a reason (1..2000), happened/not_happened, and for happened the
 * target's reference as evidence. `beforeSettleWindowEnd` (default false) must be a boolean.
 */
export function prepareSettleItem(
	index: number,
	input: { operationKey: unknown; decision: unknown; externalRef?: unknown; reason: unknown; decidedBy: unknown; beforeSettleWindowEnd?: unknown },
): SettleItem {
	const operationKey = checkOperationKey(input.operationKey);
	if (!SETTLE_DECISIONS.includes(input.decision as SettleDecision)) {
		throw new InputError(`The decision must be happened or not_happened; got ${cutAny(JSON.stringify(input.decision) ?? String(input.decision), 40)}`);
	}
	const decision = input.decision as SettleDecision;
	const decidedBy = checkOptionalText(typeof input.decidedBy === 'string' ? input.decidedBy.trim() : input.decidedBy, 'Decided by', 200);
	if (decidedBy === null) throw new InputError('"Decided By" is empty: a decision by hand must name the person who made it');
	const reason = checkOptionalText(typeof input.reason === 'string' ? input.reason.trim() : input.reason, 'The reason', 2000);
	if (reason === null) throw new InputError('The reason is empty: say why (e.g. "found payment pi_123 in the Stripe dashboard")');
	const externalRef = checkOptionalText(typeof input.externalRef === 'string' ? input.externalRef.trim() : input.externalRef, 'The external reference', LIMITS.maxReferenceLength);
	if (decision === 'happened' && externalRef === null) {
		throw new InputError('"Happened" needs the target\'s reference for the write (e.g. the payment ID), as evidence');
	}
	const early = input.beforeSettleWindowEnd ?? false;
	if (typeof early !== 'boolean') throw new InputError(`"Decide Before the Settle Window Ends" must be true or false; got ${cutAny(JSON.stringify(early) ?? String(early), 40)}`);
	return { index, operationKey, decision, externalRef: decision === 'happened' ? externalRef : null, reason, decidedBy, beforeSettleWindowEnd: early };
}

/** Applies decisions in one round trip and one transaction; one result per item, in order. */
export async function settleByHand(
	db: Queryable,
	schema: string,
	items: SettleItem[],
	ctx: EventContext = {},
	bounds?: Bounds,
): Promise<SettleResultRow[]> {
	if (items.length === 0) return [];
	const doc = JSON.stringify(
		items.map((it) => ({ i: it.index, k: it.operationKey, d: it.decision, ref: it.externalRef, reason: it.reason, by: it.decidedBy, early: it.beforeSettleWindowEnd === true })),
	);
	const rows = await boundedQuery<{
		idx: number;
		result: SettleResult;
		status: OperationStatus | null;
		attempt: number | null;
		external_ref: string | null;
		retryable: boolean | null;
		decided_by: string | null;
		decided_at: Date | null;
		decision: string | null;
		settle_until: Date | null;
	}>(db, `SELECT * FROM ${sqlFunction(schema, 'ops_settle_by_hand')}($1::jsonb, $2::jsonb)`, [doc, eventContextJson(ctx)], bounds, {
		// A decision already recorded answers refused (naming who decided), never a second decision;
		// one refused early is refused early again (nothing changed).
		repeatSafe: true,
	});
	return resultsByItem('ops_settle_by_hand', items, rows, (r) => ({
		retryable: r.retryable,
		decidedBy: r.decided_by,
		decidedAt: r.decided_at ? new Date(r.decided_at).toISOString() : null,
		decision: r.decision,
		settleUntil: r.settle_until ? new Date(r.settle_until).toISOString() : null,
	}));
}

/** A sentence for a refused decision, naming who decided (or, refused_early, when the window ends). */
export function refusalMessage(r: SettleResultRow): string {
	if (r.result === 'refused_early') {
		return (
			`"Did Not Happen" is refused until the operation's settle window ends${r.settleUntil ? ` at ${r.settleUntil}` : ''}: the write may still be landing at the target, ` +
			'and a Reserve that proceeded now would send it again (Reconcile Unknown refuses the same decision). Decide again after that time, ' +
			'or switch on "Decide Before the Settle Window Ends" if you have evidence that it cannot land; nothing was changed'
		);
	}
	if (r.status === 'succeeded' || r.status === 'failed') {
		return `Already settled as ${r.status}${r.decision ? ` (${r.decision})` : ''} by ${r.decidedBy ?? 'a workflow'}${r.decidedAt ? ` at ${r.decidedAt}` : ''}; only unknown or review operations can be settled by hand`;
	}
	return `The operation is ${r.status ?? 'gone'}, not unknown or review; only those can be settled by hand`;
}

// ---------------------------------------------------------------------------------------------
// Health

export interface LedgerHealth {
	now: string;
	byStatus: Partial<Record<OperationStatus, number>>;
	expiredLeases: number;
	oldestUnknown: { key: string; since: string; ageSeconds: number } | null;
	review: { count: number; oldestSince: string | null; oldestKey: string | null };
	compacted: number;
	eventsPerDay: Array<{ day: string; events: number }>;
	sizes: { operationsBytes: number; operationEventsBytes: number };
	/**
	 * Whether the promise survives a failover of this server: primary or standby, read-only,
	 * synchronous or asynchronous standbys, what this role cannot see, what to change
	 * (src/db/replication.ts, docs/high-availability.md).
	 */
	replication: ReplicationReport;
}

/**
 * Reads counts by status, oldest unknown, review backlog, events per day (last `days`), sizes, and
 * the server's replication report (a second bounded read-only statement).
 */
export async function ledgerHealth(db: Queryable, schema: string, days: unknown = 7, bounds?: Bounds): Promise<LedgerHealth> {
	const d = checkInt(days, 'Days of events', 1, 366);
	const rows = await boundedQuery<{ r: Omit<LedgerHealth, 'replication'> }>(db, `SELECT ${sqlFunction(schema, 'ops_health')}($1) AS r`, [d], bounds, { readOnly: true });
	const replication = assessReplication(await readReplication(db, bounds));
	return { ...rows[0].r, replication };
}

// ---------------------------------------------------------------------------------------------
// Retention

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
		olderThanDays: checkInt(o.olderThanDays, 'Older than (days)', 1, 36500),
		batchSize: checkInt(o.batchSize ?? 1000, 'The batch size', 1, 10000),
		maxBatches: checkInt(o.maxBatches ?? 100, 'Max batches', 1, 100000),
		maxDurationMs: checkInt(o.maxDurationMs ?? 60000, 'Max duration (ms)', 1000, 3600000),
		statementTimeoutMs: checkInt(o.statementTimeoutMs ?? 30000, 'The statement timeout (ms)', 100, 600000),
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
export async function runRetention(pool: Pick<Pool, 'connect'>, schema: string, o: RetentionOptions, ctx: EventContext = {}): Promise<RetentionReport> {
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
