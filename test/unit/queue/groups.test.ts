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
	test('Strict (Always First): true keeps strict on the group, false or absent leaves it off; checkGroups keeps it', () => {
		const rows = { group: [{ name: 'vip', weight: 1, strict: true }, { name: 'rest', weight: 2, strict: false }, { name: 'low', weight: 1 }] };
		const groups = [{ name: 'vip', weight: 1, strict: true }, { name: 'rest', weight: 2 }, { name: 'low', weight: 1 }];
		expect(groupsFromRows(rows)).toEqual(groups);
		expect(checkGroups(groupsFromRows(rows))).toEqual(groups);
		expect(() => checkGroups([{ name: 'a', weight: 1, strict: 'yes' as unknown as boolean }])).toThrow(InputError);
		const field = (priorityGroupsProperty(undefined, 'x').options as Array<{ values: Array<{ name: string; type: string; default: unknown }> }>)[0].values.find((v) => v.name === 'strict');
		expect(field).toMatchObject({ type: 'boolean', default: false });
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
		['a strict flag that is not a boolean', { group: [{ name: 'a', weight: 1, strict: 'true' }] }, /true or false/],
	])('%s is an InputError', (_, value, message) => {
		expect(() => groupsFromRows(value)).toThrow(InputError);
		expect(() => groupsFromRows(value)).toThrow(message);
	});
	test('ranges are still checkGroups\' job: weight 0 and duplicate names are refused there', () => {
		expect(() => checkGroups(groupsFromRows({ group: [{ name: 'a', weight: 0 }] }))).toThrow(/weight/i);
		expect(() => checkGroups(groupsFromRows({ group: [{ name: 'a', weight: 1 }, { name: 'a', weight: 2 }] }))).toThrow();
	});
});
