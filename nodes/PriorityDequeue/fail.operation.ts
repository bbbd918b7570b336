/** Priority Dequeue, operation "fail": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { type QueueOperation, taskFields } from './common';
import { type BackoffOptions, type RetryDelay, fail, prepareBackoff, prepareFailInput } from '../../src/queue';
import { runSettle } from './settle';
import { LIMITS, numberRange, rangeText } from '../shared/limits';

const description: INodeProperties[] = [
	...taskFields(),
	{
		displayName: 'Error Message',
		name: 'errorMessage',
		type: 'string',
		default: '={{ $json.error?.message ?? $json.error ?? "failed" }}',
		description: 'Recorded as the last error; a task that goes to the dead letter keeps it',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Backoff Base (Seconds)',
				name: 'backoffBaseSeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.backoffBaseSeconds),
				default: LIMITS.backoffBaseSeconds.default,
				description: 'Backoff of the first retry. Attempt n waits min(cap, base × 2^(n-1)) with equal jitter: half of it fixed, half random.',
			},
			{
				displayName: 'Backoff Cap (Seconds)',
				name: 'backoffCapSeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.backoffCapSeconds),
				default: LIMITS.backoffCapSeconds.default,
				description: 'Upper bound of the backoff before jitter',
			},
			{
				displayName: 'Fixed Delay (Seconds)',
				name: 'fixedDelaySeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.fixedDelaySeconds),
				default: LIMITS.fixedDelaySeconds.default,
				description: `With Retry Delay: Fixed, every retry waits exactly this long (${rangeText(LIMITS.fixedDelaySeconds)} seconds, one year). Read item by item.`,
			},
			{
				displayName: 'Give Up',
				name: 'giveUp',
				type: 'boolean',
				default: false,
				description: 'Whether to send the task to the dead letter now instead of retrying (for errors a retry cannot fix)',
			},
			{
				displayName: 'Retry Delay',
				name: 'retryDelay',
				type: 'options',
				options: [
					{ name: 'Exponential', value: 'exponential', description: 'Capped exponential backoff with equal jitter (Backoff Base and Backoff Cap)' },
					{ name: 'Fixed', value: 'fixed', description: 'Exactly Fixed Delay seconds before every retry, no jitter' },
				],
				default: 'exponential',
				description: 'How long a retry waits',
			},
		],
	},
];

async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	// Backoff applies to the whole batch: read from the first item.
	const first = (items.length ? this.getNodeParameter('options', 0, {}) : {}) as IDataObject;
	let backoff: BackoffOptions | undefined;
	return runSettle(
		this,
		items,
		'Fail',
		(i, task) => {
			backoff ??= prepareBackoff({
				baseSeconds: first.backoffBaseSeconds as number | undefined,
				capSeconds: first.backoffCapSeconds as number | undefined,
			});
			const options = this.getNodeParameter('options', i, {}) as IDataObject;
			const message = this.getNodeParameter('errorMessage', i, 'failed');
			return prepareFailInput({
				...task,
				error: typeof message === 'string' ? message : JSON.stringify(message),
				giveUp: options.giveUp === true,
				retryDelay: options.retryDelay as RetryDelay | undefined,
				fixedDelaySeconds: options.fixedDelaySeconds as number | undefined,
			});
		},
		(pool, schema, inputs, bounds) => fail(pool, schema, inputs, backoff, bounds),
	);
}

export const failOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Fail', action: 'Fail a task', description: 'Retry a claimed task after a backoff or a fixed delay, or send it to the dead letter at its max attempts' },
	description,
	execute,
};
