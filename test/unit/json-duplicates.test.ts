/**
 * findDuplicateMember (src/json/duplicates.ts): I-JSON (RFC 7493 §2.3) forbids two members of one
 * name in an object; JSON.parse silently keeps the last.
 */
import { findDuplicateMember } from '../../src/json/duplicates';

describe('duplicate member names in JSON text', () => {
	test.each([
		['{"a":1,"a":2}', '$', 'a'],
		['{"a":1,"b":{"c":1,"c":2}}', '$.b', 'c'],
		['{"a":1,"\\u0061":2}', '$', 'a'],
		['[1,{"x":[{},{"k":1,"k":1}]}]', '$[1].x[1]', 'k'],
		['{"a b":{"z":1,"z":1}}', '$["a b"]', 'z'],
		['{"q\\"":{"":1,"":2}}', '$["q\\""]', ''],
	])('%s has a duplicate at %s', (text, path, name) => {
		expect(() => JSON.parse(text)).not.toThrow();
		expect(findDuplicateMember(text)).toEqual({ path, name });
	});

	test.each([
		'{}',
		'[]',
		'{"a":1,"b":2}',
		'{"a":{"a":{"a":1}}}',
		'[{"a":1},{"a":2}]',
		'{"a":"{\\"a\\":1,\\"a\\":2}"}',
		'{"a":[{}, "a", {"a": 1}], "b": "}", "c": "\\\\"}',
		'"a"',
		'12',
	])('%s has none', (text) => {
		expect(() => JSON.parse(text)).not.toThrow();
		expect(findDuplicateMember(text)).toBeNull();
	});

	test('a long text is scanned in one pass', () => {
		const members = Array.from({ length: 50_000 }, (_, i) => `"k${i}":${i}`);
		expect(findDuplicateMember(`{${members.join(',')}}`)).toBeNull();
		expect(findDuplicateMember(`{${members.join(',')},"k49999":0}`)).toEqual({ path: '$', name: 'k49999' });
	});
});
