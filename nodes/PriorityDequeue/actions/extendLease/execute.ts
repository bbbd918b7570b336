import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { checkLeaseToken, checkSeconds, checkTaskId, extendLease, type ExtendLeaseInput } from '../../../../src/queue';
import { runSettle } from '../settle';

export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Extend Lease',
		(i, task): ExtendLeaseInput => ({
			taskId: checkTaskId(task.taskId),
			leaseToken: checkLeaseToken(task.leaseToken),
			leaseSeconds: checkSeconds(this.getNodeParameter('leaseSeconds', i), 'Lease', 1, 86_400),
		}),
		(pool, schema, inputs) => extendLease(pool, schema, inputs),
	);
}
