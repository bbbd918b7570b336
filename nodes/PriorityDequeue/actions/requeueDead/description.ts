import type { INodeProperties } from 'n8n-workflow';
import { queueField, show } from '../common';

export const description: INodeProperties[] = [
	queueField('requeueDead'),
	{
		displayName: 'Requeue',
		name: 'requeueScope',
		type: 'options',
		options: [
			{
				name: 'One Task per Item',
				value: 'byId',
				description: 'Requeue the dead task whose ID each input item gives',
			},
			{
				name: 'Oldest Dead Tasks of the Queue',
				value: 'oldest',
				description: 'Requeue up to a limit, once per execution',
			},
		],
		default: 'byId',
		displayOptions: show('requeueDead'),
	},
	{
		displayName: 'Task ID',
		name: 'taskId',
		type: 'string',
		default: '={{ $json.taskId }}',
		required: true,
		displayOptions: { show: { operation: ['requeueDead'], requeueScope: ['byId'] } },
	},
	{
		displayName: 'Priority Group',
		name: 'priorityGroup',
		type: 'string',
		default: '',
		description: 'Only dead tasks of this group. Empty: every group.',
		displayOptions: { show: { operation: ['requeueDead'], requeueScope: ['oldest'] } },
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 50,
		description: 'Max number of results to return',
		displayOptions: { show: { operation: ['requeueDead'], requeueScope: ['oldest'] } },
	},
];
