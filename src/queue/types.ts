/**
 * Shapes shared by the queue operations, and the conversions from database rows: bigint ids stay
 * strings (pg's default for int8), timestamptz values become ISO-8601 strings.
 */
import type { PoolClient } from 'pg';
import { quoteSchema } from '../db/identifiers';
import { checkKeyText } from '../keyText';

/** A pg Pool or a checked-out PoolClient (pass a client to enqueue inside your own transaction). */
export type Queryable = Pick<PoolClient, 'query'>;

/** Raised for arguments the caller must fix (bad queue name, weights, seconds out of range). */
export class QueueInputError extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'QueueInputError';
	}
}

/** Queue names: 1 to 200 bytes of key-like text (src/keyText.ts: no control characters). */
export function checkQueueName(queue: unknown): string {
	if (typeof queue !== 'string' || queue.trim() === '') throw new QueueInputError('Queue name must be a non-empty string');
	if (Buffer.byteLength(queue, 'utf8') > 200) throw new QueueInputError('Queue name must be at most 200 bytes');
	return checkKeyText(queue, 'Queue name', (m) => new QueueInputError(m));
}

/** Group names: 1 to 100 bytes of key-like text (src/keyText.ts). */
export function checkGroupName(group: unknown): string {
	if (typeof group !== 'string' || group.trim() === '') throw new QueueInputError('Priority group must be a non-empty string');
	if (Buffer.byteLength(group, 'utf8') > 100) throw new QueueInputError('Priority group must be at most 100 bytes');
	return checkKeyText(group, 'Priority group', (m) => new QueueInputError(m));
}

/** A task id: a positive integer given as a string or number; returned as a decimal string. */
export function checkTaskId(id: unknown): string {
	const text = typeof id === 'number' ? String(id) : typeof id === 'string' ? id.trim() : '';
	if (!/^[1-9][0-9]{0,18}$/.test(text)) throw new QueueInputError(`Task ID must be a positive integer, got ${JSON.stringify(id)}`);
	return text;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A lease token: the UUID a claim returned. */
export function checkLeaseToken(token: unknown): string {
	if (typeof token !== 'string' || !UUID.test(token.trim()))
		throw new QueueInputError(`Lease token must be the UUID returned by the dequeue, got ${JSON.stringify(token)}`);
	return token.trim().toLowerCase();
}

/** A finite number of seconds within [min, max]. */
export function checkSeconds(value: unknown, what: string, min: number, max: number): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max)
		throw new QueueInputError(`${what} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
	return n;
}

/** An integer within [min, max]. */
export function checkInt(value: unknown, what: string, min: number, max: number): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
		throw new QueueInputError(`${what} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
	return n;
}

/** The schema-qualified name of a queue function, e.g. "operation_ledger".queue_claim. */
export function fn(schema: string, name: string): string {
	return `${quoteSchema(schema)}.${name}`;
}

/** Date (or null) → ISO-8601 string (or null). */
export function iso(value: Date | string | null | undefined): string | null {
	if (value === null || value === undefined) return null;
	return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** int8 / numeric text (or null) → string (or null). */
export function idText(value: string | number | null | undefined): string | null {
	return value === null || value === undefined ? null : String(value);
}
