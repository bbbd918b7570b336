/**
 * The "Priority Groups" parameter of Priority Dequeue (Dequeue) and its trigger from node version 3:
 * an n8n fixedCollection, one row per group (a name and a weight), highest priority first and
 * reorderable by dragging. Versions 1 and 2 keep their "Groups and Weights" text (saved workflows).
 * Both forms are parsed in src/queue/groups.ts; readGroups picks the one the node's version has.
 */
import type { IDataObject, INodeProperties } from 'n8n-workflow';
import { groupsFromRows, parseGroupWeights } from '../../src/queue/groups';
import { DEFAULT_GROUPS, type GroupWeight } from '../../src/queue/states';

/** The node version from which groups are a list (fixedCollection) instead of text. */
export const GROUP_LIST_VERSION = 3;

/** displayOptions.show entry for "this node version has the list" / "the text". */
export const withGroupList = { '@version': [{ _cnd: { gte: GROUP_LIST_VERSION } }] };
export const withGroupText = { '@version': [{ _cnd: { lt: GROUP_LIST_VERSION } }] };

/** The parameter; `show` limits it (e.g. to an operation or mode), `description` says what it is for. */
export function priorityGroupsProperty(show: IDataObject, description: string): INodeProperties {
	return {
		displayName: 'Priority Groups',
		name: 'priorityGroups',
		type: 'fixedCollection',
		typeOptions: { multipleValues: true, sortable: true },
		placeholder: 'Add Group',
		// New nodes start with high 5, normal 2, low 1.
		default: { group: DEFAULT_GROUPS.map((g) => ({ name: g.name, weight: g.weight })) },
		description,
		displayOptions: { show: { ...show, ...withGroupList } },
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
						placeholder: 'high',
						description: 'The group as producers name it (Enqueue\'s Priority Group)',
					},
					{
						displayName: 'Weight',
						name: 'weight',
						type: 'number',
						typeOptions: { minValue: 1, maxValue: 1000 },
						default: 1,
						description: 'Its share of claims while every group has work (a whole number, 1 to 1000)',
					},
				],
			},
		],
	};
}

/**
 * The groups a node gave, highest priority first: the "Priority Groups" list from version 3, else
 * the "Groups and Weights" text (`text`; empty: high 5, normal 2, low 1). Throws InputError for a
 * malformed value (src/queue/groups.ts); ranges are checked by checkGroups.
 */
export function readGroups(typeVersion: number | undefined, rows: () => unknown, text: unknown): GroupWeight[] {
	return (typeVersion ?? 1) >= GROUP_LIST_VERSION ? groupsFromRows(rows()) : parseGroupWeights(text);
}
