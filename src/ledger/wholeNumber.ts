/**
 * The whole-number check of the operator and reconcile tools (Operation Ledger Admin, Reconcile
 * Unknown): their messages cut the offending value to 40 characters, where src/check.ts's checkInt
 * (the queue's) quotes it whole.
 */
import { InputError } from '../errors';
import { cutAny } from '../text';
import type { Limit } from '../limits';

/** An integer within the bound `{ min, max }` (an entry of LIMITS, src/limits.ts), given as a number or a decimal string. Throws InputError naming `what`. */
export function checkWholeNumber(value: unknown, what: string, { min, max }: Limit): number {
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
		throw new InputError(`${what} must be a whole number from ${min} to ${max}; got ${cutAny(value, 40)}`);
	}
	return n;
}
