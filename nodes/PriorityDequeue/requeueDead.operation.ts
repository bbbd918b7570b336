/** Priority Dequeue, operation "requeueDead": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, queueField, type QueueOperation } from './common';
import { prepareRequeueByIdInput, prepareRequeueDeadOptions, requeueDead, requeueDeadByIds } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import { LIMITS, numberRange } from '../shared/limits';

const description: INodeProperties[] = [
	queueField(),
	{
		displayName: 'Requeue',
		name: 'requeueScope',
		type: 'options',
		options: [
			{
				name: 'One Task per Item',
				value: 'byId',
				description: 'Requeue the dead task whose ID each input item gives',
			},
			{
				name: 'Oldest Dead Tasks of the Queue',
				value: 'oldest',
				description: 'Requeue up to a limit, once per execution',
			},
		],
		default: 'byId',
	},
	{
		displayName: 'Task ID',
		name: 'taskId',
		type: 'string',
		default: '={{ $json.taskId }}',
		required: true,
		displayOptions: { show: { requeueScope: ['byId'] } },
	},
	{
		displayName: 'Priority Group',
		name: 'priorityGroup',
		type: 'string',
		default: '',
		description: 'Only dead tasks of this group. Empty: every group.',
		displayOptions: { show: { requeueScope: ['oldest'] } },
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: numberRange(LIMITS.requeueDeadLimit),
		default: LIMITS.requeueDeadLimit.default,
		description: 'Max number of results to return',
		displayOptions: { show: { requeueScope: ['oldest'] } },
	},
];

/**
 * byId: every item's task in one call, one output item per input item.
 * oldest: one call per execution (item 0's parameters), one output item per requeued task.
 */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const scope = this.getNodeParameter('requeueScope', 0, 'byId') as string;
	const out: INodeExecutionData[] = [];
	if (scope !== 'byId') {
		const { prepared, errorItems } = prepareItems(this, items.slice(0, 1), (i) =>
			prepareRequeueDeadOptions({
				queue: this.getNodeParameter('queue', i) as string,
				group: (this.getNodeParameter('priorityGroup', i, '') as string) || null,
				limit: Number(this.getNodeParameter('limit', i, LIMITS.requeueDeadLimit.default)),
			}),
		);
		if (prepared.length === 0) return [errorItems];
		try {
			const { pool, schema, bounds } = await getLedgerConnection(this);
			const results = await requeueDead(pool, schema, prepared[0].value, bounds);
			return [results.map((r) => ({ json: asJson(r), pairedItem: { item: 0 } }))];
		} catch (e) {
			return [batchFailure(this, e, 'Requeue Dead', [0])];
		}
	}
	const { prepared, errorItems } = prepareItems(this, items, (i) =>
		prepareRequeueByIdInput({ queue: this.getNodeParameter('queue', i) as string, taskId: this.getNodeParameter('taskId', i) as string }),
	);
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		const results = await requeueDeadByIds(pool, schema, prepared.map((p) => p.value), bounds);
		results.forEach((r, k) => out.push({ json: asJson(r), pairedItem: { item: prepared[k].index } }));
	} catch (e) {
		out.push(...batchFailure(this, e, 'Requeue Dead', prepared.map((p) => p.index)));
	}
	return [out];
}

export const requeueDeadOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Requeue Dead', action: 'Requeue dead tasks', description: 'Put dead-lettered tasks back to pending' },
	description,
	execute,
};
