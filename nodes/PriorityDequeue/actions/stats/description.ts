import type { INodeProperties } from 'n8n-workflow';
import { queueField, show } from '../common';

export const description: INodeProperties[] = [
	queueField('stats'),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('stats'),
		options: [
			{
				displayName: 'Include Dead Tasks',
				name: 'deadTasks',
				type: 'number',
				typeOptions: { minValue: 0, maxValue: 1000 },
				default: 0,
				description: 'How many of the most recent dead tasks to list under deadTasks (0: none)',
			},
		],
	},
];
