/** Priority Dequeue, operation "extendLease": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { type QueueOperation, show, taskFields } from './common';
import { checkLeaseToken, checkSeconds, checkTaskId, extendLease, type ExtendLeaseInput } from '../../src/queue';
import { runSettle } from './settle';

const description: INodeProperties[] = [
	...taskFields('extendLease'),
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 86400 },
		default: 300,
		description: 'New lease length from now (heartbeat). An already expired lease cannot be extended.',
		displayOptions: show('extendLease'),
	},
];

async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Extend Lease',
		(i, task): ExtendLeaseInput => ({
			taskId: checkTaskId(task.taskId),
			leaseToken: checkLeaseToken(task.leaseToken),
			leaseSeconds: checkSeconds(this.getNodeParameter('leaseSeconds', i), 'Lease', 1, 86_400),
		}),
		(pool, schema, inputs, bounds) => extendLease(pool, schema, inputs, bounds),
	);
}

export const extendLeaseOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Extend Lease', value: 'extendLease', action: 'Extend a task lease', description: 'Heartbeat: keep holding a claimed task longer' },
	description,
	execute,
};
