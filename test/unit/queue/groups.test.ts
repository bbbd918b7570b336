/**
 * src/queue/groups.ts: the Priority Groups list Priority Dequeue and its trigger take groups in
 * (nodes/shared/groups.ts is the parameter).
 */
import { InputError } from '../../../src/errors';
import { checkGroups, groupsFromRows } from '../../../src/queue';
import { DEFAULT_GROUPS } from '../../../src/queue/states';
import { priorityGroupsProperty } from '../../../nodes/shared/groups';

describe('Priority Groups list', () => {
	test('rows in order, names trimmed, weights as numbers or numeric strings', () => {
		expect(groupsFromRows({ group: [{ name: ' vip ', weight: 7 }, { name: 'rest', weight: '2' }] })).toEqual([
			{ name: 'vip', weight: 7 },
			{ name: 'rest', weight: 2 },
		]);
	});
	test('the parameter default is the default groups and reads back as them', () => {
		const p = priorityGroupsProperty(undefined, 'x');
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
