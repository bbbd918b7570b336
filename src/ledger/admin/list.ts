/**
 * Operation Ledger Admin → List: one page of the operations that need a person (unknown, review,
 * expired lease, failed, possible duplicate), oldest first, in one read-only round trip to
 * schema/functions/ledger/ops_list_operations.sql (docs/operations.md).
 */
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { boundedQuery, type Bounds } from '../../db/bounds';
import type { Queryable } from '../../db/values';
import { InputError } from '../../errors';
import { cutAny } from '../../text';
import { LIMITS, TEXT_LIMITS } from '../../limits';
import { checkOperationKey, checkOptionalText } from '../validate';
import { checkWholeNumber } from '../wholeNumber';

/** What "List" can look for. */
export const LIST_KINDS = ['unknown', 'review', 'expired_lease', 'failed', 'possible_duplicate'] as const;
export type ListKind = (typeof LIST_KINDS)[number];

export interface ListOptions {
	kind: ListKind;
	/** Only operations at least this many seconds old (0..10 years). */
	minAgeSeconds: number;
	/** Only this target; null for all. */
	target: string | null;
	/** Page size (LIMITS.listPageSize). */
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
		minAgeSeconds: checkWholeNumber(o.minAgeSeconds ?? LIMITS.listMinAgeSeconds.default, 'The minimum age (seconds)', LIMITS.listMinAgeSeconds),
		target: checkOptionalText(o.target, 'The target', TEXT_LIMITS.maxTargetLength),
		limit: checkWholeNumber(o.limit ?? LIMITS.listPageSize.default, 'The page size', LIMITS.listPageSize),
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
export async function listOperations(db: Queryable, schema: LedgerSchema, o: ListOptions, bounds?: Bounds): Promise<ListPage> {
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
