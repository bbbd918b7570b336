/**
 * Operation Ledger Admin → Get: one operation by key with its history, in one read-only round trip
 * to schema/functions/ledger/ops_get_operation.sql (docs/operations.md).
 */
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { boundedQuery, type Bounds } from '../../db/bounds';
import type { Queryable } from '../../db/values';
import type { OperationStatus } from '../states';
import { checkOperationKey } from '../validate';
import { checkWholeNumber } from '../wholeNumber';
import { LIMITS } from '../../limits';

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

/** Get's Max Events (LIMITS.getMaxEvents). Throws InputError. */
export function checkMaxEvents(value: unknown): number {
	return checkWholeNumber(value, 'Max events', LIMITS.getMaxEvents);
}

/**
 * Reads one operation by key with its newest `maxEvents` events (1..10000), in order. Returns
 * null when no operation has the key. Throws InputError for a bad key.
 */
export async function getOperation(
	db: Queryable,
	schema: LedgerSchema,
	key: unknown,
	maxEvents: unknown = LIMITS.getMaxEvents.default,
	bounds?: Bounds,
): Promise<OperationWithHistory | null> {
	const k = checkOperationKey(key);
	const max = checkMaxEvents(maxEvents);
	const rows = await boundedQuery<{ r: OperationWithHistory | null }>(db, `SELECT ${sqlFunction(schema, 'ops_get_operation')}($1, $2) AS r`, [k, max], bounds, { readOnly: true });
	const r = rows[0]?.r ?? null;
	if (r) r.eventsTotal = Number(r.eventsTotal);
	return r;
}
