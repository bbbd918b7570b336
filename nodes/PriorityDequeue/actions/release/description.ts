import type { INodeProperties } from 'n8n-workflow';
import { show, taskFields } from '../common';

export const description: INodeProperties[] = [
	...taskFields('release'),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('release'),
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
				typeOptions: { minValue: 0 },
				default: 0,
				description: 'Seconds before the task may be claimed again. 0 keeps its place at the head of its group.',
			},
		],
	},
];
