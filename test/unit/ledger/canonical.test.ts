import { canonicalJson, fingerprint, assertJson, NotJsonError, FINGERPRINT_ALGORITHM } from '../../../src/json/canonical';

describe('canonical JSON (RFC 8785)', () => {
	it('sorts members and drops whitespace', () => {
		expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
	});

	it('gives the same fingerprint for semantically equal JSON texts', () => {
		const a = JSON.parse('{ "amount": 1.0, "currency": "EUR", "meta": { "x": 1e2, "y": -0 } }');
		const b = JSON.parse('{"meta":{"y":0,"x":100},"currency":"EUR","amount":1}');
		expect(fingerprint(a)).toBe(fingerprint(b));
		expect(fingerprint(a)).toMatch(/^[0-9a-f]{64}$/);
	});

	it('gives different fingerprints for different requests', () => {
		expect(fingerprint({ amount: 4200 })).not.toBe(fingerprint({ amount: 4300 }));
		expect(fingerprint({ amount: '4200' })).not.toBe(fingerprint({ amount: 4200 }));
		expect(fingerprint([1, 2])).not.toBe(fingerprint([2, 1]));
	});

	it('serialises numbers in ECMAScript shortest form (RFC 8785 section 3.2.2.3)', () => {
		const cases: Array<[string, string]> = [
			['1.0', '1'],
			['4.50', '4.5'],
			['2e-3', '0.002'],
			['1e21', '1e+21'],
			['1E30', '1e+30'],
			['0.000001', '0.000001'],
			['1e-7', '1e-7'],
			['-0', '0'],
			['9007199254740993', '9007199254740992'],
			['333333333.33333329', '333333333.3333333'],
		];
		// These number forms are checked with the I-JSON integer check off: by default (the ledger)
		// integers beyond ±(2^53 − 1) are refused, see below.
		for (const [text, want] of cases) expect(canonicalJson(JSON.parse(text), { rejectUnsafeIntegers: false })).toBe(want);
	});

	it('refuses integers beyond ±(2^53 − 1) by default (RFC 7493 I-JSON): two different ids never share a fingerprint', () => {
		expect(() => canonicalJson({ accountId: JSON.parse('9007199254740993') })).toThrow(/beyond ±\(2\^53 − 1\).*as strings/);
		expect(() => canonicalJson({ accountId: 9007199254740992 })).toThrow(NotJsonError);
		expect(() => canonicalJson([-9007199254740992])).toThrow(/\$\[0\]/);
		expect(() => canonicalJson({ big: 1e21 })).toThrow(NotJsonError);
		expect(canonicalJson({ a: 9007199254740991, b: -9007199254740991, c: 1.5e300 / 1e300, d: -0 })).toBe('{"a":9007199254740991,"b":-9007199254740991,"c":1.5,"d":0}');
		expect(canonicalJson({ accountId: '9007199254740993' })).toBe('{"accountId":"9007199254740993"}');
	});

	it('sorts keys by UTF-16 code units, not by code points or locale', () => {
		// U+1F600 (surrogates D83D DE00) sorts before U+FB01 by UTF-16 units.
		const obj = { '\uFB01': 1, '\u{1F600}': 2, a: 3, B: 4 };
		expect(canonicalJson(obj)).toBe('{"B":4,"a":3,"\u{1F600}":2,"\uFB01":1}');
	});

	it('names the algorithm', () => {
		expect(FINGERPRINT_ALGORITHM).toBe('sha256-jcs-rfc8785');
	});

	it.each([
		['BigInt', { a: BigInt(1) }, /\$\.a: is a BigInt/],
		['Date', { at: new Date(0) }, /\$\.at: is a Date/],
		['Map', new Map(), /is a Map object/],
		['NaN', { n: NaN }, /NaN is not a JSON number/],
		['Infinity', [Infinity], /\$\[0\]: Infinity/],
		['function', { f: () => 1 }, /is a function/],
		['undefined in an array', [undefined], /\$\[0\]: is undefined/],
		['NUL in a string', { s: 'a\u0000b' }, /NUL character/],
		['NUL in a key', { 'a\u0000': 1 }, /NUL character/],
		['lone surrogate', { s: '\uD800x' }, /lone UTF-16 surrogate/],
	])('rejects %s with the path of the offending value', (_name, value, message) => {
		expect(() => assertJson(value)).toThrow(NotJsonError);
		expect(() => canonicalJson(value)).toThrow(message);
	});

	it('rejects circular references but accepts shared (non-circular) ones', () => {
		const shared = { x: 1 };
		expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
		const loop: Record<string, unknown> = {};
		loop.self = loop;
		expect(() => canonicalJson(loop)).toThrow(/circular/);
	});

	it('omits members whose value is undefined, as JSON does', () => {
		expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
	});

	it('rejects nesting deeper than the limit', () => {
		let deep: unknown = 1;
		for (let i = 0; i < 150; i++) deep = [deep];
		expect(() => canonicalJson(deep)).toThrow(/deeper than 100/);
	});
});

describe('canonical JSON in one walk', () => {
	// A small deterministic generator (mulberry32), so a failure names a reproducible case.
	function rng(seed: number) {
		let a = seed >>> 0;
		return () => {
			a = (a + 0x6d2b79f5) >>> 0;
			let t = a;
			t = Math.imul(t ^ (t >>> 15), t | 1);
			t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
			return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
		};
	}
	const STRINGS = ['', 'a', 'B', 'é', '\u{1F600}', '\uFB01', 'quote"back\\slash', 'line\nbreak', '\u2028', '10', '2', '__proto__x', 'ünïcödé'];
	const NUMBERS = [0, -0, 1, -1, 1.5, 0.1, 1e21, 1e-7, 123456789.125, 9007199254740991, -9007199254740991, 5e-324, 1.7976931348623157e308];
	function value(r: () => number, depth: number): unknown {
		const pick = <T,>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
		const k = depth > 4 ? Math.floor(r() * 4) : Math.floor(r() * 6);
		switch (k) {
			case 0:
				return pick(STRINGS) + (r() < 0.5 ? '' : pick(STRINGS));
			case 1:
				return pick(NUMBERS);
			case 2:
				return pick([true, false, null]);
			case 3:
				return r() < 0.5 ? pick(STRINGS) : Math.round(r() * 1e6) / 100;
			case 4:
				return Array.from({ length: Math.floor(r() * 5) }, () => value(r, depth + 1));
			default: {
				const o: Record<string, unknown> = r() < 0.1 ? Object.create(null) : {};
				const n = Math.floor(r() * 6);
				for (let i = 0; i < n; i++) o[pick(STRINGS) + pick(STRINGS)] = r() < 0.1 ? undefined : value(r, depth + 1);
				return o;
			}
		}
	}

	it('writes exactly what the canonicalize library writes after the check, and refuses what the check refuses, for 3,000 generated values', () => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { canonicalize } = require('../../../src/vendor') as { canonicalize: (v: unknown) => string };
		const r = rng(8785);
		let refused = 0;
		for (let n = 0; n < 3000; n++) {
			const v = value(r, 0);
			// Without the integer check every generated value is plain JSON.
			expect(canonicalJson(v, { rejectUnsafeIntegers: false })).toBe(canonicalize(v));
			let reason: string | undefined;
			try {
				assertJson(v, { rejectUnsafeIntegers: true });
			} catch (e) {
				reason = (e as Error).message;
			}
			if (reason === undefined) expect(canonicalJson(v)).toBe(canonicalize(v));
			else {
				refused++;
				expect(() => canonicalJson(v)).toThrow(reason);
			}
		}
		// Both paths were taken (1e21 and the largest double are integers beyond 2^53).
		expect(refused).toBeGreaterThan(50);
		expect(refused).toBeLessThan(2950);
	});

	it('refuses with the message the check gives, naming the first problem in member order', () => {
		// Two problems: the check walks members in their own order, so "z" (first) is named, not "a".
		const two = { z: NaN, a: 'x\u0000' };
		expect(() => assertJson(two)).toThrow('$.z: NaN is not a JSON number');
		expect(() => canonicalJson(two)).toThrow('$.z: NaN is not a JSON number');
		// A refused key is refused even when its member has no value (and is left out).
		expect(() => canonicalJson({ ok: 1, ['bad\u0000']: undefined })).toThrow(/NUL character/);
		// Nesting within a smaller limit of the caller's.
		expect(() => canonicalJson([[[1]]], { maxDepth: 2 })).toThrow(/deeper than 2/);
		expect(canonicalJson([[[1]]], { maxDepth: 3 })).toBe('[[[1]]]');
		// NUL allowed when the caller allows it, lone surrogates never.
		expect(canonicalJson({ s: 'a\u0000b' }, { rejectNul: false })).toBe('{"s":"a\\u0000b"}');
		expect(() => canonicalJson({ s: '\uDC00' }, { rejectNul: false })).toThrow(/lone UTF-16 surrogate/);
		expect(canonicalJson({ s: '\u{1F600}' })).toBe('{"s":"\u{1F600}"}');
	});
});
