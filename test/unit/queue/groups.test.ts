/**
 * src/queue/groups.ts: the two forms Priority Dequeue and its trigger take groups in (the text of
 * node versions 1-2, the Priority Groups list of version 3), and nodes/shared/groups.ts picking one
 * by node version.
 */
import { InputError } from '../../../src/errors';
import { checkGroups, groupsFromRows, parseGroupNames, parseGroupWeights } from '../../../src/queue';
import { DEFAULT_GROUPS } from '../../../src/queue/states';
import { priorityGroupsProperty, readGroups } from '../../../nodes/shared/groups';

describe('groups text (versions 1 and 2)', () => {
	test('name:weight, highest first; empty text gives the defaults', () => {
		expect(parseGroupWeights(' urgent : 9 , bulk:1 ')).toEqual([
			{ name: 'urgent', weight: 9 },
			{ name: 'bulk', weight: 1 },
		]);
		expect(parseGroupWeights('')).toEqual(DEFAULT_GROUPS);
		expect(() => parseGroupWeights('high, low:1')).toThrow(InputError);
	});
	test('the trigger\'s Wake Up text also takes bare names', () => {
		expect(parseGroupNames('high, low')).toEqual([
			{ name: 'high', weight: 1 },
			{ name: 'low', weight: 1 },
		]);
		expect(parseGroupNames('high:5')).toEqual([{ name: 'high', weight: 5 }]);
	});
});

describe('Priority Groups list (version 3)', () => {
	test('rows in order, names trimmed, weights as numbers or numeric strings', () => {
		expect(groupsFromRows({ group: [{ name: ' vip ', weight: 7 }, { name: 'rest', weight: '2' }] })).toEqual([
			{ name: 'vip', weight: 7 },
			{ name: 'rest', weight: 2 },
		]);
	});
	test('the parameter default is the default groups and reads back as them', () => {
		const p = priorityGroupsProperty({}, 'x');
		expect(groupsFromRows(p.default)).toEqual(DEFAULT_GROUPS);
		expect(p.type).toBe('fixedCollection');
	});
	test.each([
		['no rows', { group: [] }, /at least one group/],
		['an empty list', {}, /at least one group/],
		['not a list', 'high:5', /expected a list/],
		['a row without a name', { group: [{ name: ' ', weight: 1 }] }, /group 1 has no name/],
		['a fractional weight', { group: [{ name: 'a', weight: 1.5 }] }, /whole number/],
		['a weight that is text', { group: [{ name: 'a', weight: 'lots' }] }, /whole number/],
	])('%s is an InputError', (_, value, message) => {
		expect(() => groupsFromRows(value)).toThrow(InputError);
		expect(() => groupsFromRows(value)).toThrow(message);
	});
	test('ranges are still checkGroups\' job: weight 0 and duplicate names are refused there', () => {
		expect(() => checkGroups(groupsFromRows({ group: [{ name: 'a', weight: 0 }] }))).toThrow(/weight/i);
		expect(() => checkGroups(groupsFromRows({ group: [{ name: 'a', weight: 1 }, { name: 'a', weight: 2 }] }))).toThrow();
	});
});

describe('readGroups picks the form of the node version', () => {
	const rows = { group: [{ name: 'only', weight: 3 }] };
	test('version 3 reads the list and ignores the text', () => {
		expect(readGroups(3, () => rows, 'high:5')).toEqual([{ name: 'only', weight: 3 }]);
	});
	test('versions 1 and 2 read the text and never the list', () => {
		const never = () => {
			throw new Error('must not be read');
		};
		expect(readGroups(2, never, 'a:2, b:1')).toEqual([
			{ name: 'a', weight: 2 },
			{ name: 'b', weight: 1 },
		]);
		expect(readGroups(1, never, undefined)).toEqual(DEFAULT_GROUPS);
	});
});
