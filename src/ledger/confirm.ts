/**
 * Confirm: record what happened at the outside system, fenced by the lease token.
 * One round trip per batch via <schema>.confirm_operations() (schema/functions/ledger/confirm_operations.sql).
 */
import { resultsByItem } from './rows';
import { sqlFunction, type LedgerSchema } from '../db/identifiers';
import { isUuid } from '../check';
import { InputError } from '../errors';
import { canonicalJson, NotJsonError } from '../json/canonical';
import { cutAny, cutText, storableText } from '../text';
import { queryChunked } from '../db/batch';
import type { Queryable } from '../db/values';
import { type Bounds } from '../db/bounds';
import { CONFIRM_OUTCOMES, eventContextJson, isConfirmOutcome, type ConfirmOutcome, type ConfirmResult, type EventContext, type OperationStatus } from './states';
import { TEXT_LIMITS } from '../limits';
import { checkOperationKey, checkOptionalText } from './validate';


/** Default ceiling for a stored response: 256 KiB of canonical JSON. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;
/** The largest "Max Response Size" (16 MiB); the smallest is 2 bytes. */
export const MAX_RESPONSE_BYTES_LIMIT = 16 * 1024 * 1024;

/**
 * Validates "Max Response Size" (bytes of canonical JSON): a whole number from 2 to 16 MiB, given
 * as a number or a decimal string; undefined/null/'' mean the default (256 KiB). Anything else
 * (`abc`, NaN, negatives, fractions, Infinity) is an item error: nothing is recorded.
 */
export function checkMaxResponseBytes(value: unknown): number {
	if (value === undefined || value === null || value === '') return DEFAULT_MAX_RESPONSE_BYTES;
	const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < 2 || n > MAX_RESPONSE_BYTES_LIMIT) {
		throw new InputError(
			`Max Response Size must be a whole number of bytes from 2 to ${MAX_RESPONSE_BYTES_LIMIT} (16 MiB), got ${cutAny(JSON.stringify(typeof value === 'number' && !Number.isFinite(value) ? String(value) : value) ?? String(value), 40)}. Nothing was recorded.`,
		);
	}
	return n;
}

export interface ConfirmItem {
	index: number;
	operationKey: string;
	leaseToken: string;
	outcome: ConfirmOutcome;
	externalRef: string | null;
	/** Canonical JSON text of the response to store, or 'null'. */
	responseJson: string;
	responseTruncated: boolean;
	reason: string | null;
	/** For `failed`: may a new attempt be reserved? */
	retryable: boolean;
}

export interface ConfirmInput {
	operationKey: unknown;
	leaseToken: unknown;
	outcome: unknown;
	externalRef?: unknown;
	response?: unknown;
	reason?: unknown;
	retryable?: unknown;
	/** Largest stored response in bytes of canonical JSON (default 262144). */
	/** Bytes; validated by checkMaxResponseBytes (an item error when not a whole number 2..16 MiB). */
	maxResponseBytes?: unknown;
	/** What to do with a larger response: keep a truncated preview (default) or reject the item. */
	oversize?: 'truncate' | 'error';
}

/**
 * Validates one confirmation. Throws InputError (missing key or lease token, unknown outcome,
 * response that is not JSON, or too large with oversize 'error') before anything is written.
 * An oversized response with oversize 'truncate' is replaced by
 * `{ truncated: true, originalBytes, preview }` (preview: the first 1024 characters of its JSON);
 * the external reference is always kept.
 */
export function prepareConfirmItem(index: number, input: ConfirmInput): ConfirmItem {
	const operationKey = checkOperationKey(input.operationKey);
	if (!isUuid(input.leaseToken)) {
		throw new InputError(
			input.leaseToken === undefined || input.leaseToken === null || input.leaseToken === ''
				? 'No lease token: only items that came out of Reserve Operation\'s "Proceed" output hold a lease and can be confirmed'
				: 'The lease token is not a UUID; pass the ledger.leaseToken that Reserve Operation returned',
		);
	}
	const outcome = input.outcome;
	if (!isConfirmOutcome(outcome)) {
		throw new InputError(`The outcome must be ${CONFIRM_OUTCOMES.slice(0, -1).join(', ')} or ${CONFIRM_OUTCOMES[CONFIRM_OUTCOMES.length - 1]}; got ${cutAny(JSON.stringify(outcome), 40)}`);
	}
	const externalRef = checkOptionalText(input.externalRef, 'The external reference', TEXT_LIMITS.maxReferenceLength);
	// Diagnostic text, cut anyway: made storable (NUL, lone surrogates: U+FFFD) instead of failing the outcome.
	const reason = checkOptionalText(typeof input.reason === 'string' ? storableText(input.reason, 2000) : input.reason, 'The reason', 2000);
	let responseJson: string;
	try {
		responseJson = canonicalJson(input.response === undefined ? null : input.response);
	} catch (e) {
		if (e instanceof NotJsonError) {
			throw new InputError(`The response cannot be stored: ${e.message.replace(/^\$/, 'response')}. Nothing was recorded; switch off "Store Response" or fix the value.`);
		}
		throw e;
	}
	const max = checkMaxResponseBytes(input.maxResponseBytes);
	let responseTruncated = false;
	const bytes = Buffer.byteLength(responseJson, 'utf8');
	if (bytes > max) {
		if (input.oversize === 'error') {
			throw new InputError(`The response is ${bytes} bytes as JSON; at most ${max} may be stored. Nothing was recorded; raise "Max Response Size" or choose "Truncate".`);
		}
		responseJson = JSON.stringify({ truncated: true, originalBytes: bytes, preview: cutText(responseJson, 1024) });
		responseTruncated = true;
	}
	return {
		index,
		operationKey,
		leaseToken: input.leaseToken.toLowerCase(),
		outcome,
		externalRef,
		responseJson,
		responseTruncated,
		reason,
		retryable: outcome === 'failed' ? input.retryable === true : false,
	};
}

export interface ConfirmResultRow {
	index: number;
	result: ConfirmResult;
	/** The row's status after this call (null when not found). */
	status: OperationStatus | null;
	attempt: number | null;
	externalRef: string | null;
	/** The holder confirmed after its lease expired or after the row went unknown. */
	late: boolean;
	/** A stale report of success the ledger does not hold: the write may have happened twice. */
	possibleDuplicate: boolean;
}

export function encodeConfirmBatch(items: ConfirmItem[]): string {
	return `[${encodeConfirmItems(items).join(',')}]`;
}

/** One JSON text per item (see encodeConfirmBatch). */
export function encodeConfirmItems(items: ConfirmItem[]): string[] {
	return items.map(
			(it) =>
				`{"i":${it.index},"k":${JSON.stringify(it.operationKey)},"tok":"${it.leaseToken}","o":"${it.outcome}",` +
				`"ref":${it.externalRef === null ? 'null' : JSON.stringify(it.externalRef)},"trunc":${it.responseTruncated},` +
				`"reason":${it.reason === null ? 'null' : JSON.stringify(it.reason)},"retry":${it.retryable},"resp":${it.responseJson}}`,
	);
}

/**
 * The SQL text Confirm sends (one statement). It names the columns it reads: the function also
 * returns updated_at, which no node shows, and parsing a date per item was a measurable part of a
 * 1,000-item Confirm's client time.
 */
export function confirmSql(schema: LedgerSchema): string {
	return `SELECT idx, result, status, attempt, external_ref, late, possible_duplicate FROM ${sqlFunction(schema, 'confirm_operations')}($1::jsonb, $2::jsonb)`;
}

interface ConfirmRow {
	idx: number;
	result: ConfirmResult;
	status: OperationStatus | null;
	attempt: number | null;
	external_ref: string | null;
	late: boolean;
	possible_duplicate: boolean;
}

/** Confirms a batch in one round trip and one transaction; one result per item, in order. */
export async function confirmOperations(
	db: Queryable,
	schema: LedgerSchema,
	items: ConfirmItem[],
	ctx: EventContext = {},
	bounds?: Bounds,
): Promise<ConfirmResultRow[]> {
	if (items.length === 0) return [];
	// One statement, or chunks in one bounded transaction for very large batches (src/db/batch.ts).
	const rows = await queryChunked<ConfirmRow>(db, confirmSql(schema), encodeConfirmItems(items), items.map((it) => it.operationKey), [eventContextJson(ctx)], bounds, {
		// Confirming a recorded report again answers repeated (or stale), never a second outcome.
		repeatSafe: true,
	});
	return resultsByItem('confirm_operations', items, rows, (r) => ({
		late: r.late,
		possibleDuplicate: r.possible_duplicate,
	}));
}

/**
 * Records leases that were granted but whose write was certainly never sent as failed, retryable:
 * the next Reserve of each key proceeds as the next attempt (with a new downstream idempotency key).
 * For a node that decided a batch and then throws before emitting any item (so no Proceed item
 * left it): without this, those leases would run out and turn unknown, and a Retry On Fail of the
 * node would find them held (In Progress) by its own earlier try.
 * `granted`: operation key and lease token of each Proceed result. `reason` is stored (cut to 2,000
 * characters as any Confirm reason). Best effort by design: it throws what confirmOperations throws, and a caller that
 * cannot record the release loses nothing, since the leases then expire and reconcile as usual.
 */
export async function releaseUnsent(
	db: Queryable,
	schema: LedgerSchema,
	granted: Array<{ operationKey: string; leaseToken: string }>,
	reason: string,
	ctx: EventContext = {},
	bounds?: Bounds,
): Promise<ConfirmResultRow[]> {
	const items = granted.map((g, i) =>
		prepareConfirmItem(i, { operationKey: g.operationKey, leaseToken: g.leaseToken, outcome: 'failed', retryable: true, reason }),
	);
	return confirmOperations(db, schema, items, ctx, bounds);
}
