/**
 * The "Priority Groups" parameter of Priority Dequeue (Dequeue) and its trigger: an n8n
 * fixedCollection, one row per group (a name and a weight), highest priority first and reorderable
 * by dragging. Its value is parsed by groupsFromRows (src/queue/groups.ts).
 */
import type { IDisplayOptions, INodeProperties } from 'n8n-workflow';
import { DEFAULT_GROUPS } from '../../src/queue/states';
import { LIMITS, numberRange, rangeText } from './limits';

/** The parameter; `show` limits it (e.g. to an operation; none: always shown), `description` says what it is for. */
export function priorityGroupsProperty(show: IDisplayOptions['show'] | undefined, description: string): INodeProperties {
	return {
		displayName: 'Priority Groups',
		name: 'priorityGroups',
		type: 'fixedCollection',
		typeOptions: { multipleValues: true, sortable: true },
		placeholder: 'Add Group',
		// New nodes start with high 5, normal 2, low 1.
		default: { group: DEFAULT_GROUPS.map((g) => ({ name: g.name, weight: g.weight })) },
		description,
		...(show ? { displayOptions: { show } } : {}),
		options: [
			{
				displayName: 'Group',
				name: 'group',
				values: [
					{
						displayName: 'Name',
						name: 'name',
						type: 'string',
						default: '',
						placeholder: 'e.g. high',
						description: 'The group as producers name it (Enqueue\'s Priority Group)',
					},
					{
						displayName: 'Weight',
						name: 'weight',
						type: 'number',
						typeOptions: numberRange(LIMITS.groupWeight),
						default: LIMITS.groupWeight.default,
						description: `Its share of claims while every group has work (a whole number, ${rangeText(LIMITS.groupWeight)}); not used for a strict group`,
					},
					{
						displayName: 'Strict (Always First)',
						name: 'strict',
						type: 'boolean',
						default: false,
						description:
							'Whether this group is served before every weighted group: its ready tasks are claimed oldest first before any other group\'s, strict groups among themselves in list order. A strict group with a steady backlog starves the groups below it.',
					},
				],
			},
		],
	};
}
