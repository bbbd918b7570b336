import type { INodeProperties } from 'n8n-workflow';
import { show, taskFields } from '../common';

export const description: INodeProperties[] = [
	...taskFields('fail'),
	{
		displayName: 'Error Message',
		name: 'errorMessage',
		type: 'string',
		default: '={{ $json.error?.message ?? $json.error ?? "failed" }}',
		description: 'Recorded as the last error; a task that goes to the dead letter keeps it',
		displayOptions: show('fail'),
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('fail'),
		options: [
			{
				displayName: 'Backoff Base (Seconds)',
				name: 'backoffBaseSeconds',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 5,
				description: 'Backoff of the first retry. Attempt n waits min(cap, base × 2^(n-1)) with equal jitter: half of it fixed, half random.',
			},
			{
				displayName: 'Backoff Cap (Seconds)',
				name: 'backoffCapSeconds',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 3600,
				description: 'Upper bound of the backoff before jitter',
			},
			{
				displayName: 'Give Up',
				name: 'giveUp',
				type: 'boolean',
				default: false,
				description: 'Whether to send the task to the dead letter now instead of retrying (for errors a retry cannot fix)',
			},
		],
	},
];
