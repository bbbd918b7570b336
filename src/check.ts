/**
 * Value checks shared by the ledger and the queue. Each returns the value in its one accepted form
 * or throws InputError (src/errors.ts) naming the field; nothing has been written at that point.
 */
import { InputError } from './errors';
import type { Limit } from './limits';

/** An integer within [limit.min, limit.max] (an entry of LIMITS, src/limits.ts), given as a number or a decimal string. Throws InputError. */
export function checkInt(value: unknown, what: string, { min, max }: Limit): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
		throw new InputError(`${what} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
	return n;
}

/** A finite number of seconds within [limit.min, limit.max] (an entry of LIMITS, src/limits.ts), given as a number or a decimal string. Throws InputError. */
export function checkSeconds(value: unknown, what: string, { min, max }: Limit): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max)
		throw new InputError(`${what} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
	return n;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID in its 8-4-4-4-12 hex text form (any case, no surrounding white space). */
export function isUuid(value: unknown): value is string {
	return typeof value === 'string' && UUID.test(value);
}
