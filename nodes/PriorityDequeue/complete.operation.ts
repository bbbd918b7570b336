/** Priority Dequeue, operation "complete": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { type QueueOperation, taskFields } from './common';
import { complete, prepareCompleteInput } from '../../src/queue';
import { jsonParameter } from '../shared/context';
import { runSettle } from './settle';

const description: INodeProperties[] = [
	...taskFields(),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Result',
				name: 'result',
				type: 'json',
				default: '{}',
				description: 'Optional JSON kept with the archived task',
			},
		],
	},
];

async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Complete',
		(i, task) => {
			const options = this.getNodeParameter('options', i, {}) as IDataObject;
			return prepareCompleteInput({
				...task,
				result: options.result === undefined ? undefined : jsonParameter(this, options.result, 'The result', i, true, 'last-wins'),
			});
		},
		(pool, schema, inputs, bounds) => complete(pool, schema, inputs, bounds),
	);
}

export const completeOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Complete', action: 'Complete a task', description: 'Mark a claimed task succeeded (needs its live lease)' },
	description,
	execute,
};
