/** Priority Dequeue, operation "extendLease": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { type QueueOperation, taskFields } from './common';
import { extendLease, prepareExtendLeaseInput } from '../../src/queue';
import { runSettle } from './settle';
import { LIMITS, numberRange } from '../shared/limits';

const description: INodeProperties[] = [
	...taskFields(),
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.queueLeaseSeconds),
		default: LIMITS.queueLeaseSeconds.default,
		description: 'New lease length from now (heartbeat). An already expired lease cannot be extended.',
	},
];

async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Extend Lease',
		(i, task) => prepareExtendLeaseInput({ ...task, leaseSeconds: this.getNodeParameter('leaseSeconds', i) as number }),
		(pool, schema, inputs, bounds) => extendLease(pool, schema, inputs, bounds),
	);
}

export const extendLeaseOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Extend Lease', action: 'Extend a task lease', description: 'Heartbeat: keep holding a claimed task longer' },
	description,
	execute,
};
