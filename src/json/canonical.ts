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
import { createHash, hash as cryptoHash } from 'node:crypto';
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

/** Deepest nesting the one-pass writer follows before it leaves the value to the two-pass path (which also names a cycle as such). */
const ONE_PASS_MAX_DEPTH = 100;
/** A NUL or any surrogate: the one-pass writer looks closer (checkText) only when a string holds one. */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
const NUL_OR_SURROGATE = /[\u0000\uD800-\uDFFF]/;
/** Thrown inside canonicalText when the value needs the two-pass path (never leaves this module). */
const NOT_PLAIN = Symbol('not plain');

/**
 * The canonical text in one walk, checking what assertJson checks as it writes: the member order
 * of RFC 8785 (keys sorted by UTF-16 code units, the default sort of JavaScript strings), strings
 * and numbers as JSON.stringify writes them (ECMAScript's shortest round-trip numbers, which RFC
 * 8785 section 3.2.2.3 takes over; -0 as 0), members with an undefined value left out. On
 * anything assertJson might refuse (or nesting past ONE_PASS_MAX_DEPTH, which a cycle reaches) it
 * throws NOT_PLAIN, and canonicalJson takes the two-pass path, which finds and names the problem.
 */
function canonicalText(v: unknown, depth: number, rejectNul: boolean, rejectUnsafe: boolean, maxDepth: number): string {
	switch (typeof v) {
		case 'string':
			if (NUL_OR_SURROGATE.test(v) && ((rejectNul && v.includes('\u0000')) || LONE_SURROGATE.test(v))) throw NOT_PLAIN;
			return JSON.stringify(v);
		case 'number':
			if (!Number.isFinite(v) || (rejectUnsafe && Number.isInteger(v) && !Number.isSafeInteger(v))) throw NOT_PLAIN;
			return JSON.stringify(v);
		case 'boolean':
			return v ? 'true' : 'false';
		case 'object':
			break;
		default:
			throw NOT_PLAIN;
	}
	if (v === null) return 'null';
	if (depth >= maxDepth) throw NOT_PLAIN;
	if (Array.isArray(v)) {
		let out = '[';
		for (let i = 0; i < v.length; i++) {
			const el: unknown = v[i];
			// An undefined element (or a hole) is refused by assertJson.
			if (el === undefined) throw NOT_PLAIN;
			out += (i === 0 ? '' : ',') + canonicalText(el, depth + 1, rejectNul, rejectUnsafe, maxDepth);
		}
		return `${out}]`;
	}
	const proto = Object.getPrototypeOf(v);
	if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN;
	const obj = v as Record<string, unknown>;
	const keys = Object.keys(obj).sort();
	let out = '{';
	let first = true;
	for (const key of keys) {
		// The key is checked even when its member is left out, as assertJson does.
		const name = canonicalText(key, depth, rejectNul, false, maxDepth);
		const child = obj[key];
		if (child === undefined) continue;
		out += `${first ? '' : ','}${name}:${canonicalText(child, depth + 1, rejectNul, rejectUnsafe, maxDepth)}`;
		first = false;
	}
	return `${out}}`;
}

/**
 * RFC 8785 canonical JSON text of `value`. Throws NotJsonError for non-JSON input.
 * Plain values (every ordinary request and response) are checked and written in one walk
 * (canonicalText); anything else goes the two-pass way, assertJson then the `canonicalize`
 * library, so a refusal names the same member with the same reason as before.
 */
export function canonicalJson(value: unknown, options: JsonCheckOptions = {}): string {
	const checks = { ...options, rejectUnsafeIntegers: options.rejectUnsafeIntegers !== false };
	try {
		return canonicalText(
			value,
			0,
			checks.rejectNul !== false,
			checks.rejectUnsafeIntegers,
			Math.min(checks.maxDepth ?? ONE_PASS_MAX_DEPTH, ONE_PASS_MAX_DEPTH),
		);
	} catch (e) {
		if (e !== NOT_PLAIN) throw e;
	}
	assertJson(value, checks);
	const text = canonicalize(value);
	if (text === undefined) throw new NotJsonError('$', 'has no JSON form');
	return text;
}

/** SHA-256 (hex) of UTF-8 `text`: one call (crypto.hash where Node has it, Node 20.12+), no Hash object per item. */
export const sha256Hex: (text: string) => string =
	typeof (cryptoHash as unknown) === 'function'
		? (text) => cryptoHash('sha256', text, 'hex')
		: (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** SHA-256 (hex) of the canonical JSON of `value`. Throws NotJsonError for non-JSON input. */
export function fingerprint(value: unknown, options?: JsonCheckOptions): string {
	return sha256Hex(canonicalJson(value, options));
}
