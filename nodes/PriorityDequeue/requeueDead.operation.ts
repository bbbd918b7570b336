/** Priority Dequeue, operation "requeueDead": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, queueField, type QueueOperation, show } from './common';
import { checkQueueName, checkTaskId, requeueDead, type RequeueResult } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';

const description: INodeProperties[] = [
	queueField('requeueDead'),
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
		displayOptions: show('requeueDead'),
	},
	{
		displayName: 'Task ID',
		name: 'taskId',
		type: 'string',
		default: '={{ $json.taskId }}',
		required: true,
		displayOptions: { show: { operation: ['requeueDead'], requeueScope: ['byId'] } },
	},
	{
		displayName: 'Priority Group',
		name: 'priorityGroup',
		type: 'string',
		default: '',
		description: 'Only dead tasks of this group. Empty: every group.',
		displayOptions: { show: { operation: ['requeueDead'], requeueScope: ['oldest'] } },
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 50,
		description: 'Max number of results to return',
		displayOptions: { show: { operation: ['requeueDead'], requeueScope: ['oldest'] } },
	},
];

/**
 * byId: every item's task in one call, one output item per input item.
 * oldest: one call per execution (item 0's parameters), one output item per requeued task.
 */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const scope = this.getNodeParameter('requeueScope', 0, 'byId') as string;
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, scope === 'byId' ? items : items.slice(0, 1), (i) => ({
		queue: checkQueueName(this.getNodeParameter('queue', i)),
		taskId: scope === 'byId' ? checkTaskId(this.getNodeParameter('taskId', i)) : undefined,
		group: scope === 'byId' ? null : ((this.getNodeParameter('priorityGroup', i, '') as string) || null),
		limit: scope === 'byId' ? undefined : Number(this.getNodeParameter('limit', i, 50)),
	}));
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, config, bounds } = await getLedgerConnection(this);
		if (scope !== 'byId') {
			const p = prepared[0].value;
			const results = await requeueDead(pool, config.schema, { queue: p.queue, group: p.group, limit: p.limit }, bounds);
			out.push(...results.map((r) => ({ json: asJson(r), pairedItem: { item: 0 } })));
			return [out];
		}
		// One call per queue named by the items (usually one).
		const byQueue = new Map<string, typeof prepared>();
		for (const p of prepared) byQueue.set(p.value.queue, [...(byQueue.get(p.value.queue) ?? []), p]);
		for (const [queue, list] of byQueue) {
			const results = await requeueDead(pool, config.schema, { queue, taskIds: list.map((p) => p.value.taskId as string) }, bounds);
			const byId = new Map<string, RequeueResult>(results.map((r) => [r.taskId, r]));
			const seen = new Set<string>();
			for (const p of list) {
				const id = p.value.taskId as string;
				const r = byId.get(id) as RequeueResult;
				// The same id twice in one batch: the second is reported as not dead (already requeued).
				const json = seen.has(id) && r.outcome === 'requeued' ? { ...r, outcome: 'not_dead' } : r;
				seen.add(id);
				out.push({ json: asJson(json), pairedItem: { item: p.index } });
			}
		}
	} catch (e) {
		out.push(...batchFailure(this, e, 'Requeue Dead', prepared.map((p) => p.index)));
	}
	return [out];
}

export const requeueDeadOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Requeue Dead', value: 'requeueDead', action: 'Requeue dead tasks', description: 'Put dead-lettered tasks back to pending' },
	description,
	execute,
};
