/** Priority Dequeue, operation "dequeue": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, queueField, type QueueOperation } from './common';
import { dequeue, groupsFromRows, prepareDequeueOptions } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { priorityGroupsProperty } from '../shared/groups';
import { batchFailure, prepareItems } from '../shared/items';
import { LIMITS, numberRange } from '../shared/limits';

const description: INodeProperties[] = [
	{
		displayName:
			'Claims tasks once per execution (with the parameters of the first input item) and outputs one item per claimed task, or none when the queue has no ready work. Settle each task with Complete or Fail before its lease ends.',
		name: 'dequeueNotice',
		type: 'notice',
		default: '',
	},
	queueField(),
	{
		displayName: 'Batch Size',
		name: 'batchSize',
		type: 'number',
		typeOptions: numberRange(LIMITS.dequeueBatchSize),
		default: LIMITS.dequeueBatchSize.default,
		description: 'Maximum number of tasks to claim in this execution',
	},
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.queueLeaseSeconds),
		default: LIMITS.queueLeaseSeconds.default,
		description:
			'Visibility timeout: how long the claim holds each task. A task not completed, failed, released or extended by then is handed out again, and that counts as an attempt.',
	},
	priorityGroupsProperty(
		undefined,
		'Priority groups, highest first (drag to reorder), each with its weighted-fair share while every group has work. Tasks of groups not listed are not claimed.',
	),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Aging Interval (Seconds)',
				name: 'agingSeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.agingSeconds),
				default: LIMITS.agingSeconds.default,
				description:
					'Tasks that have waited longer than this many seconds move to the front, oldest first, within a tenth of the interval (at most 1 s), so no task waits forever behind other groups\' work. 0 switches aging off.',
			},
		],
	},
];

/** One claim per execution, read from item 0; every claimed task is paired with item 0. */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const { prepared, errorItems } = prepareItems(this, items.slice(0, 1), (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		return prepareDequeueOptions({
			queue: this.getNodeParameter('queue', i) as string,
			limit: Number(this.getNodeParameter('batchSize', i)),
			leaseSeconds: Number(this.getNodeParameter('leaseSeconds', i)),
			agingSeconds: options.agingSeconds === undefined ? undefined : Number(options.agingSeconds),
			groups: groupsFromRows(this.getNodeParameter('priorityGroups', i)),
		});
	});
	if (prepared.length === 0) return [errorItems];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		const tasks = await dequeue(pool, schema, prepared[0].value, bounds);
		return [tasks.map((t) => ({ json: asJson(t), pairedItem: { item: 0 } }))];
	} catch (e) {
		return [batchFailure(this, e, 'Dequeue', [0])];
	}
}

export const dequeueOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Dequeue', action: 'Claim tasks', description: 'Claim up to N ready tasks, weighted fair across priority groups, each with a lease' },
	description,
	execute,
};
