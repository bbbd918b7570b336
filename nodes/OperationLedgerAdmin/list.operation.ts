/** Operation Ledger Admin, operation "List": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { checkListOptions, listOperations } from '../../src/ledger/admin/list';
import { prepareItems, readEach } from '../shared/items';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange } from '../shared/limits';


const description: INodeProperties[] = [
	{
		displayName: 'List',
		name: 'kind',
		type: 'options',
		options: [
			{ name: 'Expired Leases', value: 'expired_lease', description: 'Reserved, but the lease ended without a confirmation' },
			{ name: 'Failed', value: 'failed', description: 'Confirmed failures, oldest first' },
			{ name: 'Needs Review', value: 'review', description: 'Reconciliation gave up, or a possible duplicate: a person must decide' },
			{
				name: 'Possible Duplicates',
				value: 'possible_duplicate',
				description: 'Operations whose write may have taken effect more than once (e.g. it ran again in a retried execution), oldest mark first, any status',
			},
			{ name: 'Unknown', value: 'unknown', description: 'The outcome is not known yet' },
		],
		default: 'review',
	},
	{
		displayName: 'Minimum Age (Seconds)',
		name: 'minAgeSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.listMinAgeSeconds),
		default: LIMITS.listMinAgeSeconds.default,
		description: 'Only operations at least this old, in seconds (e.g. 3600 for an alert on anything unknown for an hour). 0: all.',
	},
	{
		displayName: 'Target',
		name: 'target',
		type: 'string',
		default: '',
		description: 'Only operations for this target. Empty: all.',
	},
	{
		displayName: 'Page Size',
		name: 'limit',
		type: 'number',
		typeOptions: numberRange(LIMITS.listPageSize),
		default: LIMITS.listPageSize.default,
		description: 'Max number of results to return',
	},
	{
		displayName: 'Cursor',
		name: 'cursor',
		type: 'string',
		default: '',
		description: 'The "nextCursor" of the previous page, for the next one. Empty: the first page.',
	},
	{
		displayName: 'Output',
		name: 'listOutput',
		type: 'options',
		options: [
			{ name: 'One Item per Operation', value: 'items', description: 'Each item also carries "page" (total, nextCursor)' },
			{ name: 'One Item per Page', value: 'page', description: 'A single item with total, items and nextCursor' },
		],
		default: 'items',
	},
];

/** One page per input item (usually one). Returns [Unrecorded, Result]. */
async function executeList(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const input = fns.getInputData();
	const items = input.length ? input : [{ json: {} }];
	const { prepared, errorItems } = prepareItems(fns, items, (i) => ({
		options: checkListOptions({
			kind: fns.getNodeParameter('kind', i),
			minAgeSeconds: fns.getNodeParameter('minAgeSeconds', i, 0),
			target: fns.getNodeParameter('target', i, ''),
			limit: fns.getNodeParameter('limit', i, 50),
			cursor: fns.getNodeParameter('cursor', i, ''),
		}),
		output: fns.getNodeParameter('listOutput', i, 'items') as string,
	}));
	return readEach(fns, 'Operation Ledger Admin (list)', prepared, errorItems, async (conn, p) => {
		const page = await listOperations(conn.pool, conn.schema, p.value.options, conn.bounds);
		const pageInfo = { kind: p.value.options.kind, total: page.total, count: page.items.length, nextCursor: page.nextCursor };
		if (p.value.output === 'page') return [{ json: { ...pageInfo, items: page.items as IDataObject[] }, pairedItem: { item: p.index } }];
		return page.items.map((row) => ({ json: { ...(row as IDataObject), page: pageInfo }, pairedItem: { item: p.index } }));
	});
}

export const listOperation: NodeOperation = {
	option: { name: 'List', description: 'List operations that need a person: unknown, review, expired leases, failed', action: 'List operations' },
	description,
	execute() {
		return executeList(this);
	},
};
