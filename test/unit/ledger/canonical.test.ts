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
