/**
 * Reserve: record the intent to perform an outside write, before sending it.
 * One round trip per batch: all items go to <schema>.reserve_operations() as one JSON document and
 * are decided in one transaction (see schema/migrations/0001_ledger.sql for the state machine).
 */
import { sqlFunction, type LedgerSchema } from '../db/identifiers';
import { InputError } from '../errors';
import type { Queryable } from '../db/values';
import { type Bounds } from '../db/bounds';
import { queryChunked } from '../db/batch';
import { canonicalJson, FINGERPRINT_ALGORITHM, NotJsonError, sha256Hex } from '../json/canonical';
import { eventContextJson, iso, type EventContext, type OperationStatus, type ReserveOutcome } from './states';
import { TEXT_LIMITS } from '../limits';
import { DEFAULT_SETTLE_SECONDS, checkLeaseSeconds, checkOperationKey, checkOptionalKeyText, checkSettleSeconds } from './validate';


/** A pg Pool or PoolClient (src/db/values.ts). */
export type { Queryable } from '../db/values';

/** One validated item, ready to send. */
export interface ReserveItem {
	/** Position of the item in the node's input (echoed back, recorded on events). */
	index: number;
	operationKey: string;
	/** SHA-256 hex of the request's RFC 8785 canonical JSON. */
	fingerprint: string;
	/** RFC 8785 canonical JSON text of the request (stored for reconcile lookups). */
	canonicalRequest: string;
	target: string | null;
	/** Lease duration in seconds (LIMITS.leaseSeconds: 1 .. 7 days). */
	leaseSeconds: number;
	/**
	 * Settle window in seconds (LIMITS.settleWindowSeconds: 1 .. 30 days, default 120): how long after the operation becomes unknown
	 * (or after its lease ends) a write may still land at the target. Stored with the operation;
	 * Reconcile Unknown cannot record "did not happen" before it has passed.
	 */
	settleSeconds: number;
}

/** What Reserve decided for one item. Timestamps are ISO-8601 (database clock). */
export interface ReserveResult {
	index: number;
	/** `busy`: the key stayed locked by another transaction beyond the lock timeout; nothing was recorded for it. */
	outcome: ReserveOutcome;
	/** For an item whose key an earlier item of the same batch reserved: that item's index. */
	repeatOfItem: number | null;
	/**
	 * The stored operation's status and attempt, also for `conflict` (what the key is used for);
	 * null for `busy`. A conflict learns nothing else of the other request (reference, response,
	 * idempotency key, fingerprint and request stay null/hidden).
	 */
	status: OperationStatus | null;
	attempt: number | null;
	/** Set only for `proceed`: the fencing token Confirm must present. */
	leaseToken: string | null;
	/** When the current lease ends; null for `conflict`, `already_succeeded` and `failed_permanently` (no lease is live). */
	leaseExpiresAt: string | null;
	/** Pass to the outside system as the Idempotency-Key header. New for each attempt. Null for `conflict`. */
	idempotencyKey: string | null;
	externalRef: string | null;
	/** The stored response, for `already_succeeded` replays only. */
	response: unknown;
	responseTruncated: boolean;
	/** The stored reason; for `conflict`, why the request was refused (the key was used with a different request). */
	reason: string | null;
	retryable: boolean | null;
}

/**
 * Validates one item and computes its fingerprint. Throws InputError (empty or oversized key,
 * bad lease, non-JSON or oversized request) before anything is written.
 */
export function prepareReserveItem(
	index: number,
	input: { operationKey: unknown; request: unknown; target?: unknown; leaseSeconds: unknown; settleSeconds?: unknown },
): ReserveItem {
	const operationKey = checkOperationKey(input.operationKey);
	const leaseSeconds = checkLeaseSeconds(input.leaseSeconds);
	const settleSeconds = checkSettleSeconds(input.settleSeconds ?? DEFAULT_SETTLE_SECONDS);
	const target = checkOptionalKeyText(input.target, 'The target', TEXT_LIMITS.maxTargetLength);
	let canonicalRequest: string;
	try {
		canonicalRequest = canonicalJson(input.request === undefined ? null : input.request);
	} catch (e) {
		if (e instanceof NotJsonError) throw new InputError(`The request cannot be fingerprinted: ${e.message.replace(/^\$/, 'request')}`);
		throw e;
	}
	if (canonicalRequest.length > TEXT_LIMITS.maxRequestBytes) {
		const bytes = Buffer.byteLength(canonicalRequest, 'utf8');
		if (bytes > TEXT_LIMITS.maxRequestBytes) {
			throw new InputError(`The request is ${bytes} bytes as canonical JSON; at most ${TEXT_LIMITS.maxRequestBytes} are allowed. Fingerprint a smaller business identity (ids and amounts), not whole documents.`);
		}
	}
	const fp = sha256Hex(canonicalRequest);
	return { index, operationKey, fingerprint: fp, canonicalRequest, target, leaseSeconds, settleSeconds };
}

interface ReserveRow {
	idx: number;
	outcome: ReserveOutcome;
	status: OperationStatus | null;
	attempt: number | null;
	lease_token: string | null;
	lease_expires_at: Date | null;
	idempotency_key: string | null;
	external_ref: string | null;
	response: unknown;
	response_truncated: boolean | null;
	reason: string | null;
	retryable: boolean | null;
}

/** The reason given to an item that repeats the key of an earlier item of its batch. */
export const REPEAT_IN_BATCH = 'repeat in this batch: an earlier item of the same batch holds the lease for this key';

/** Serialises the batch for reserve_operations(). The request is embedded as its canonical text. */
export function encodeReserveBatch(items: ReserveItem[]): string {
	return `[${encodeReserveItems(items).join(',')}]`;
}

/** One JSON text per item (see encodeReserveBatch). */
export function encodeReserveItems(items: ReserveItem[]): string[] {
	return items.map(
		(it) =>
			`{"i":${it.index},"k":${JSON.stringify(it.operationKey)},"f":"${it.fingerprint}","a":"${FINGERPRINT_ALGORITHM}",` +
			`"t":${it.target === null ? 'null' : JSON.stringify(it.target)},"l":${it.leaseSeconds},"s":${it.settleSeconds},"r":${it.canonicalRequest}}`,
	);
}

/**
 * The SQL text Reserve sends (one statement). It names the columns it reads: the function also
 * returns created_at and updated_at, which no node shows, and parsing two dates per item was a
 * measurable part of a 1,000-item Reserve's client time.
 */
export function reserveSql(schema: LedgerSchema): string {
	return (
		'SELECT idx, outcome, status, attempt, lease_token, lease_expires_at, idempotency_key, external_ref, response, ' +
		`response_truncated, reason, retryable FROM ${sqlFunction(schema, 'reserve_operations')}($1::jsonb, $2::jsonb)`
	);
}

/**
 * Reserves a batch in one round trip and one transaction (batches over the per-statement caps of
 * src/db/batch.ts: several statements in one transaction; over the per-call caps: BatchTooLargeError). Returns one result per item, in the
 * order of `items`. Throws the database error if the statement fails (then nothing was recorded), or
 * OutcomeUnknownError (src/db/bounds.ts) when the connection was lost with the COMMIT on its way:
 * then the batch may have been recorded (reserving the same keys again is safe).
 */
export async function reserveOperations(
	db: Queryable,
	schema: LedgerSchema,
	items: ReserveItem[],
	ctx: EventContext = {},
	bounds?: Bounds,
): Promise<ReserveResult[]> {
	if (items.length === 0) return [];
	// One statement, or chunks in one bounded transaction for very large batches (src/db/batch.ts).
	const rows = await queryChunked<ReserveRow>(db, reserveSql(schema), encodeReserveItems(items), items.map((it) => it.operationKey), [eventContextJson(ctx)], bounds, {
		// Reserving a recorded key again answers in_progress (or its outcome), never a second Proceed.
		repeatSafe: true,
	});
	const byIndex = new Map<number, ReserveRow[]>();
	for (const r of rows) {
		const list = byIndex.get(r.idx);
		if (list) list.push(r);
		else byIndex.set(r.idx, [r]);
	}
	// Same-batch repeats: an item whose key an earlier item of this batch reserved (proceed) is not
	// "another execution": it is told which item holds the lease.
	const proceededBy = new Map<string, number>();
	return items.map((it) => {
		const row = byIndex.get(it.index)?.shift();
		if (!row) throw new Error(`reserve_operations returned no row for item ${it.index}`);
		const holder = proceededBy.get(it.operationKey);
		const repeatOfItem = row.outcome === 'in_progress' && holder !== undefined ? holder : null;
		if (row.outcome === 'proceed') proceededBy.set(it.operationKey, it.index);
		return {
			index: it.index,
			outcome: row.outcome,
			repeatOfItem,
			status: row.status,
			attempt: row.attempt,
			leaseToken: row.lease_token,
			leaseExpiresAt: iso(row.lease_expires_at),
			idempotencyKey: row.idempotency_key,
			externalRef: row.external_ref,
			response: row.response ?? null,
			responseTruncated: row.response_truncated === true,
			reason: repeatOfItem !== null ? REPEAT_IN_BATCH : row.reason,
			retryable: row.retryable,
		};
	});
}
