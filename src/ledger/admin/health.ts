/**
 * Operation Ledger Admin → Health: counts by status, the oldest unknown, the review backlog, events
 * per day, table sizes (schema/functions/ledger/ops_health.sql) and the server's replication report
 * (src/db/replication.ts); two bounded read-only statements (docs/operations.md).
 */
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { boundedQuery, type Bounds } from '../../db/bounds';
import type { Queryable } from '../../db/values';
import { assessReplication, readReplication, type ReplicationReport } from '../../db/replication';
import type { OperationStatus } from '../states';
import { checkWholeNumber } from '../wholeNumber';
import { LIMITS } from '../../limits';

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

/** Health's days of events (LIMITS.healthDays). Throws InputError. */
export function checkHealthDays(value: unknown): number {
	return checkWholeNumber(value, 'Days of events', LIMITS.healthDays);
}

/**
 * Reads counts by status, oldest unknown, review backlog, events per day (last `days`), sizes, and
 * the server's replication report (a second bounded read-only statement).
 */
export async function ledgerHealth(db: Queryable, schema: LedgerSchema, days: unknown = LIMITS.healthDays.default, bounds?: Bounds): Promise<LedgerHealth> {
	const d = checkHealthDays(days);
	const rows = await boundedQuery<{ r: Omit<LedgerHealth, 'replication'> }>(db, `SELECT ${sqlFunction(schema, 'ops_health')}($1) AS r`, [d], bounds, { readOnly: true });
	const replication = assessReplication(await readReplication(db, bounds));
	return { ...rows[0].r, replication };
}
