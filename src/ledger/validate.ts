/** Checks on what a node is about to write; each throws InputError (src/errors.ts) with a clear message. */
import { LIMITS, TEXT_LIMITS } from '../limits';
import { cutAny, cutText } from '../text';
import { checkKeyText } from '../keyText';
import { InputError } from '../errors';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Non-empty printable ASCII (U+0020..U+007E). */
const PRINTABLE_ASCII_KEY = /^[\x20-\x7e]+$/;
/** A space at the start or end of the text or next to a ':' separator. */
const SPACE_AT_EDGE = /^ | $| :|: /;

/**
 * Validates an operation key and returns it in its one stored form. The rule, the same for "Build
 * From Parts" and "Custom Key":
 *   - a string (a finite number is taken as its decimal text), not empty;
 *   - no white space (JavaScript's String.prototype.trim set, which includes Unicode spaces and
 *     U+FEFF) at the start or end of the key or of any of its ':'-separated segments: rejected,
 *     never trimmed silently, so `ent-X ` can neither quietly become `ent-X` nor quietly be a
 *     second key for it. A key built from parts is accepted exactly when the same text given as a
 *     custom key is;
 *   - no control characters (U+0000..U+001F, U+007F) and no lone UTF-16 surrogates;
 *   - Unicode Normalization Form C (UAX #15): the key is NFC-normalised, so "é" typed as one code
 *     point or as "e" + combining accent is the same key;
 *   - at most 512 bytes of UTF-8 after normalisation.
 */
export function checkOperationKey(key: unknown): string {
	// Printable ASCII with no space at an end or next to a ':' passes every rule below as it is (no
	// control character, nothing to trim, already NFC, one byte per character): most keys are such
	// text, and this costs a fraction of the full checks (per item of every batch).
	if (typeof key === 'string' && key.length <= TEXT_LIMITS.maxKeyBytes && PRINTABLE_ASCII_KEY.test(key) && !SPACE_AT_EDGE.test(key)) return key;
	if (key === undefined || key === null || (typeof key === 'string' && key.trim() === '')) {
		throw new InputError('The operation key is empty. Every write needs a business operation key such as "invoice:create:customer-42:v3"; there is no way to skip the ledger.');
	}
	if (typeof key !== 'string') {
		if (typeof key === 'number' && Number.isFinite(key)) return checkOperationKey(String(key));
		throw new InputError(`The operation key must be a string, got ${Array.isArray(key) ? 'an array' : typeof key}`);
	}
	if (key !== key.trim()) throw new InputError('The operation key has leading or trailing white space; remove it so the same intent always gives the same key (it is not trimmed silently)');
	checkKeyText(key, 'The operation key', (m) => new InputError(m));
	if (key.split(':').some((seg) => seg !== seg.trim())) {
		throw new InputError('The operation key has white space next to a ":" separator; remove it so the same intent always gives the same key (it is not trimmed silently)');
	}
	const nfc = key.normalize('NFC');
	const bytes = Buffer.byteLength(nfc, 'utf8');
	if (bytes > TEXT_LIMITS.maxKeyBytes) throw new InputError(`The operation key is ${bytes} bytes long; at most ${TEXT_LIMITS.maxKeyBytes} are allowed. Hash long parts first.`);
	return nfc;
}

/**
 * Builds `resource:action:entity:version` from parts, each non-empty, without ':' and without
 * leading or trailing white space (rejected, not trimmed: the same rule as a custom key), then
 * applies checkOperationKey() (NFC, length).
 */
export function buildOperationKey(parts: { resource: unknown; action: unknown; entity: unknown; version: unknown }): string {
	const out: string[] = [];
	for (const name of ['resource', 'action', 'entity', 'version'] as const) {
		const raw = parts[name];
		const v = typeof raw === 'number' && Number.isFinite(raw) ? String(raw) : raw;
		if (typeof v !== 'string' || v.trim() === '') {
			throw new InputError(`The operation key part "${name}" is empty. Keys are built as resource:action:entity:version, e.g. payment:charge:order-1001:v1`);
		}
		checkKeyText(v, `The operation key part "${name}"`, (m) => new InputError(m));
		if (v.includes(':')) throw new InputError(`The operation key part "${name}" ("${cutText(v, 60)}") contains ":", which separates the parts; use "Custom Key" mode for other shapes`);
		if (v !== v.trim()) {
			throw new InputError(`The operation key part "${name}" ("${cutText(v, 60)}") has leading or trailing white space; remove it so the same intent always gives the same key (it is not trimmed silently)`);
		}
		out.push(v);
	}
	return checkOperationKey(out.join(':'));
}

/** Default settle window: LIMITS.settleWindowSeconds.default (120 seconds). */
export const DEFAULT_SETTLE_SECONDS = LIMITS.settleWindowSeconds.default;

/** Validates a settle window in seconds (integer within LIMITS.settleWindowSeconds, 1 .. 30 days; a floor above zero). */
export function checkSettleSeconds(value: unknown): number {
	const { min, max } = LIMITS.settleWindowSeconds;
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
		throw new InputError(`The settle window must be a whole number of seconds from ${min} to ${max} (30 days); got ${cutAny(value, 40)}`);
	}
	return n;
}

/** Validates a lease duration in seconds (integer within LIMITS.leaseSeconds, 1 .. 7 days). */
export function checkLeaseSeconds(value: unknown): number {
	const { min, max } = LIMITS.leaseSeconds;
	const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
	if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
		throw new InputError(`The lease must be a whole number of seconds from ${min} to ${max} (7 days); got ${cutAny(value, 40)}`);
	}
	return n;
}

/** Validates an optional key-like text field (the target): checkOptionalText plus src/keyText.ts. */
export function checkOptionalKeyText(value: unknown, what: string, maxLength: number): string | null {
	if (typeof value === 'string') checkKeyText(value, what, (m) => new InputError(m));
	return checkOptionalText(value, what, maxLength);
}

/** Validates an optional short text field (target, reference). Returns null for empty. */
export function checkOptionalText(value: unknown, what: string, maxLength: number): string | null {
	if (value === undefined || value === null || value === '') return null;
	const s = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
	if (typeof s !== 'string') throw new InputError(`${what} must be a string, got ${typeof value}`);
	if (s.includes('\u0000')) throw new InputError(`${what} contains a NUL character`);
	if (LONE_SURROGATE.test(s)) throw new InputError(`${what} contains a lone UTF-16 surrogate`);
	if (s.length > maxLength) throw new InputError(`${what} is ${s.length} characters long; at most ${maxLength} are allowed`);
	return s;
}
