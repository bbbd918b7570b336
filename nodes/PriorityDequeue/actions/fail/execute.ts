import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { checkLeaseToken, checkSeconds, checkTaskId, fail, type FailInput } from '../../../../src/queue';
import { runSettle } from '../settle';

export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	// Backoff applies to the whole batch: read from the first item.
	const first = (items.length ? this.getNodeParameter('options', 0, {}) : {}) as IDataObject;
	let backoff: { baseSeconds: number; capSeconds: number } | undefined;
	return runSettle(
		this,
		items,
		'Fail',
		(i, task): FailInput => {
			backoff ??= {
				baseSeconds: checkSeconds(first.backoffBaseSeconds ?? 5, 'Backoff base', 0, 86_400),
				capSeconds: checkSeconds(first.backoffCapSeconds ?? 3600, 'Backoff cap', 0, 31_536_000),
			};
			const options = this.getNodeParameter('options', i, {}) as IDataObject;
			const message = this.getNodeParameter('errorMessage', i, 'failed');
			return {
				taskId: checkTaskId(task.taskId),
				leaseToken: checkLeaseToken(task.leaseToken),
				error: typeof message === 'string' ? message || 'failed' : JSON.stringify(message),
				giveUp: options.giveUp === true,
			};
		},
		(pool, schema, inputs) => fail(pool, schema, inputs, backoff),
	);
}
