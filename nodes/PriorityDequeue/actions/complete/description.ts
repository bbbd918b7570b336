import type { INodeProperties } from 'n8n-workflow';
import { show, taskFields } from '../common';

export const description: INodeProperties[] = [
	...taskFields('complete'),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('complete'),
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
