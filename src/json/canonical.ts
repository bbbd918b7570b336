/**
 * Canonical JSON and request fingerprints.
 *
 * Canonical form: RFC 8785 (JSON Canonicalization Scheme, JCS): object members sorted by their
 * UTF-16 code units, no whitespace, numbers in ECMAScript shortest round-trip form (so `1.0` and
 * `1`, `1e2` and `100` serialise alike), strings escaped as ECMAScript JSON.stringify does. The
 * serialisation itself is done by the `canonicalize` library (by one of the RFC's authors); this
 * module first checks that the value is I-JSON (RFC 7493), which JCS requires, and rejects what
 * JSON cannot carry faithfully instead of silently converting it.
 *
 * The fingerprint is SHA-256 over the UTF-8 canonical text, in lower-case hex, tagged with
 * FINGERPRINT_ALGORITHM. It is computed in Node, never from Postgres jsonb text (jsonb reorders
 * keys and rewrites numbers).
 */
import { createHash } from 'node:crypto';
import { canonicalize } from '../vendor';
import { CoreError } from '../errors';

export const FINGERPRINT_ALGORITHM = 'sha256-jcs-rfc8785';

/** Raised for a value that has no faithful JSON form. `path` points at the offending member. Not retryable. */
export class NotJsonError extends CoreError {
	readonly retryable = false;
	constructor(
		public readonly path: string,
		reason: string,
	) {
		super(`${path}: ${reason}`);
		this.name = 'NotJsonError';
	}
}

export interface JsonCheckOptions {
	/** Deepest nesting allowed (default 100). */
	maxDepth?: number;
	/** Reject U+0000 in strings and keys (default true): Postgres text and jsonb cannot store it. */
	rejectNul?: boolean;
	/**
	 * Reject integers beyond ±(2^53 − 1) (I-JSON, RFC 7493 §2.2). Default false in assertJson();
	 * canonicalJson() and fingerprint() (the ledger's requests and responses) default it to true.
	 */
	rejectUnsafeIntegers?: boolean;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Throws NotJsonError unless `value` is plain JSON: null, boolean, finite number, string, array,
 * or an object whose prototype is Object.prototype or null. Rejects BigInt, Date (and any other
 * object with toJSON), Map, Set, Buffer, functions, symbols, undefined array elements, NaN and
 * Infinity, with rejectUnsafeIntegers integers beyond ±(2^53 − 1) (I-JSON, RFC 7493 §2.2: they may already have been rounded,
 * so two different ids would get one fingerprint), circular references, lone surrogates, and (by
 * default) NUL characters. -0 is accepted and serialised as 0 (RFC 8785 §3.2.2.3).
 * Object members whose value is undefined are allowed and omitted, as JSON.stringify does.
 */
export function assertJson(value: unknown, options: JsonCheckOptions = {}, path = '$'): void {
	const maxDepth = options.maxDepth ?? 100;
	const rejectNul = options.rejectNul !== false;
	const rejectUnsafe = options.rejectUnsafeIntegers === true;
	const seen = new Set<object>();
	// The path to the current value, as segments; turned into text only when reporting an error.
	const trail: Array<string | number> = [];
	const where = (): string =>
		trail.reduce<string>(
			(p, seg) => (typeof seg === 'number' ? `${p}[${seg}]` : /^[A-Za-z_$][\w$]*$/.test(seg) ? `${p}.${seg}` : `${p}[${JSON.stringify(seg)}]`),
			path,
		);
	const fail = (reason: string): never => {
		throw new NotJsonError(where(), reason);
	};
	const checkText = (s: string): void => {
		if (rejectNul && s.includes('\u0000')) fail('contains a NUL character (U+0000), which Postgres cannot store');
		if (LONE_SURROGATE.test(s)) fail('contains a lone UTF-16 surrogate, which is not valid Unicode (RFC 8785 requires I-JSON)');
	};
	const walk = (v: unknown, depth: number): void => {
		switch (typeof v) {
			case 'string':
				checkText(v);
				return;
			case 'boolean':
				return;
			case 'number':
				if (!Number.isFinite(v)) fail(`${String(v)} is not a JSON number`);
				// I-JSON (RFC 7493 §2.2): integers beyond ±(2^53 − 1) are not exact in IEEE 754 doubles;
				// 9007199254740993 has already become 9007199254740992 by the time it gets here.
				if (rejectUnsafe && Number.isInteger(v) && !Number.isSafeInteger(v)) {
					fail(`${String(v)} is an integer beyond ±(2^53 − 1) (RFC 7493 I-JSON), so it may already have been rounded and would not tell two different values apart; send such ids as strings`);
				}
				return;
			case 'bigint':
				fail('is a BigInt; convert it to a string or a number first');
				return;
			case 'undefined':
				fail('is undefined');
				return;
			case 'function':
			case 'symbol':
				fail(`is a ${typeof v}, not JSON`);
				return;
		}
		if (v === null) return;
		const obj = v as object;
		if (depth >= maxDepth) fail(`nests deeper than ${maxDepth} levels`);
		if (seen.has(obj)) fail('is a circular reference');
		seen.add(obj);
		if (Array.isArray(obj)) {
			for (let i = 0; i < obj.length; i++) {
				trail.push(i);
				walk(obj[i], depth + 1);
				trail.pop();
			}
		} else {
			const proto = Object.getPrototypeOf(obj);
			if (proto !== Object.prototype && proto !== null) {
				fail(`is ${obj instanceof Date ? 'a Date (use .toISOString())' : `a ${proto?.constructor?.name ?? 'non-plain'} object`}, not plain JSON`);
			}
			for (const key of Object.keys(obj)) {
				const child = (obj as Record<string, unknown>)[key];
				trail.push(key);
				checkText(key);
				if (child !== undefined) walk(child, depth + 1);
				trail.pop();
			}
		}
		seen.delete(obj);
	};
	walk(value, 0);
}

/** RFC 8785 canonical JSON text of `value`. Throws NotJsonError for non-JSON input. */
export function canonicalJson(value: unknown, options: JsonCheckOptions = {}): string {
	assertJson(value, { ...options, rejectUnsafeIntegers: options.rejectUnsafeIntegers !== false });
	const text = canonicalize(value);
	if (text === undefined) throw new NotJsonError('$', 'has no JSON form');
	return text;
}

/** SHA-256 (hex) of the canonical JSON of `value`. Throws NotJsonError for non-JSON input. */
export function fingerprint(value: unknown, options?: JsonCheckOptions): string {
	return createHash('sha256').update(canonicalJson(value, options), 'utf8').digest('hex');
}
