/** Priority Dequeue, operation "release": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { type QueueOperation, taskFields } from './common';
import { prepareReleaseInput, release } from '../../src/queue';
import { runSettle } from './settle';
import { LIMITS, numberRange } from '../shared/limits';

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
				displayName: 'Count Attempt',
				name: 'countAttempt',
				type: 'boolean',
				default: false,
				description: 'Whether this claim counts as an attempt (by default a released claim does not)',
			},
			{
				displayName: 'Delay (Seconds)',
				name: 'delaySeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.releaseDelaySeconds),
				default: LIMITS.releaseDelaySeconds.default,
				description: 'Seconds before the task may be claimed again. 0 keeps its place at the head of its group.',
			},
		],
	},
];

async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runSettle(
		this,
		items,
		'Release',
		(i, task) => {
			const options = this.getNodeParameter('options', i, {}) as IDataObject;
			return prepareReleaseInput({ ...task, delaySeconds: options.delaySeconds as number | undefined, countAttempt: options.countAttempt === true });
		},
		(pool, schema, inputs, bounds) => release(pool, schema, inputs, bounds),
	);
}

export const releaseOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Release', action: 'Release a task', description: 'Give a claimed task back without failing it' },
	description,
	execute,
};
