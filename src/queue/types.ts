/**
 * The queue's own input checks (queue and group names, task ids, lease tokens), plus re-exports of
 * the plumbing it shares with the ledger: Queryable, iso, idText (src/db/values.ts), checkInt,
 * checkSeconds (src/check.ts), fn = sqlFunction, LedgerSchema and its one constructor ledgerSchema
 * (src/db/identifiers.ts).
 */
import { checkKeyText } from '../keyText';
import { InputError } from '../errors';
import { isUuid } from '../check';
import { cutAny } from '../text';

export type { Queryable } from '../db/values';
export { iso, idText } from '../db/values';
export { checkInt, checkSeconds } from '../check';
/** The schema-qualified name of a queue function (src/db/identifiers.ts, one schema convention). */
export { sqlFunction as fn } from '../db/identifiers';
/** The schema value every queue function takes: `ledgerSchema('operation_ledger')`, made once per connection. */
export { ledgerSchema, InvalidSchemaNameError, type LedgerSchema } from '../db/identifiers';

/** Queue names: 1 to 200 bytes of key-like text (src/keyText.ts: no control characters). */
export function checkQueueName(queue: unknown): string {
	if (typeof queue !== 'string' || queue.trim() === '') throw new InputError('Queue name must be a non-empty string');
	if (Buffer.byteLength(queue, 'utf8') > 200) throw new InputError('Queue name must be at most 200 bytes');
	return checkKeyText(queue, 'Queue name', (m) => new InputError(m));
}

/** Group names: 1 to 100 bytes of key-like text (src/keyText.ts). */
export function checkGroupName(group: unknown): string {
	if (typeof group !== 'string' || group.trim() === '') throw new InputError('Priority group must be a non-empty string');
	if (Buffer.byteLength(group, 'utf8') > 100) throw new InputError('Priority group must be at most 100 bytes');
	return checkKeyText(group, 'Priority group', (m) => new InputError(m));
}

/** Largest task id: the column is a Postgres bigint (2^63 - 1). */
export const MAX_TASK_ID = 9223372036854775807n;

/**
 * A task id: a positive integer up to MAX_TASK_ID (the bigint column's range, so a larger one is
 * this item's error, not a 22003 that fails the batch), given as a string or a safe-integer
 * number; returned as a decimal string.
 */
export function checkTaskId(id: unknown): string {
	const text = typeof id === 'number' && Number.isSafeInteger(id) ? String(id) : typeof id === 'string' ? id.trim() : '';
	if (!/^[1-9][0-9]{0,18}$/.test(text) || BigInt(text) > MAX_TASK_ID)
		throw new InputError(`Task ID must be a positive integer up to ${MAX_TASK_ID}, got ${cutAny(JSON.stringify(id) ?? String(id), 60)}`);
	return text;
}

/** A lease token: the UUID a claim returned. */
export function checkLeaseToken(token: unknown): string {
	if (typeof token !== 'string' || !isUuid(token.trim()))
		throw new InputError(`Lease token must be the UUID returned by the dequeue, got ${cutAny(JSON.stringify(token) ?? String(token), 60)}`);
	return token.trim().toLowerCase();
}
