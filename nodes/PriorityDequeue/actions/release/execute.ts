import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { checkLeaseToken, checkSeconds, checkTaskId, release, type ReleaseInput } from '../../../../src/queue';
import { runSettle } from '../settle';

export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Release',
		(i, task): ReleaseInput => {
			const options = this.getNodeParameter('options', i, {}) as IDataObject;
			return {
				taskId: checkTaskId(task.taskId),
				leaseToken: checkLeaseToken(task.leaseToken),
				delaySeconds: checkSeconds(options.delaySeconds ?? 0, 'Release delay', 0, 31_536_000),
				countAttempt: options.countAttempt === true,
			};
		},
		(pool, schema, inputs) => release(pool, schema, inputs),
	);
}
