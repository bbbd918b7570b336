import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { checkLeaseToken, checkTaskId, complete, type CompleteInput } from '../../../../src/queue';
import { jsonParameter } from '../../../shared/context';
import { runSettle } from '../settle';

export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Complete',
		(i, task): CompleteInput => {
			const options = this.getNodeParameter('options', i, {}) as IDataObject;
			return {
				taskId: checkTaskId(task.taskId),
				leaseToken: checkLeaseToken(task.leaseToken),
				result: options.result === undefined ? undefined : jsonParameter(this, options.result, 'The result', i),
			};
		},
		(pool, schema, inputs) => complete(pool, schema, inputs),
	);
}
