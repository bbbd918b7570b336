import type { INodeProperties } from 'n8n-workflow';
import { queueField, show } from '../common';

export const description: INodeProperties[] = [
	queueField('enqueue'),
	{
		displayName: 'Priority Group',
		name: 'priorityGroup',
		type: 'string',
		default: 'normal',
		required: true,
		description: 'Group of the task: high, normal or low by default; any name the consumers list under Groups and Weights',
		displayOptions: show('enqueue'),
	},
	{
		displayName: 'Payload',
		name: 'payload',
		type: 'json',
		default: '={{ $json }}',
		description: 'JSON the consumer receives as payload',
		displayOptions: show('enqueue'),
	},
	{
		displayName: 'Dedupe Key',
		name: 'dedupeKey',
		type: 'string',
		default: '',
		description:
			'Optional. While a task with this key is pending or processing in the queue, enqueueing again returns that task (marked deduplicated) instead of a new one.',
		displayOptions: show('enqueue'),
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('enqueue'),
		options: [
			{
				displayName: 'Delay (Seconds)',
				name: 'delaySeconds',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 0,
				description: 'Seconds from now before the task may be claimed',
			},
			{
				displayName: 'Max Attempts',
				name: 'maxAttempts',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 1000 },
				default: 5,
				description: 'Claims allowed before the task goes to the dead letter (an expired lease counts as an attempt)',
			},
			{
				displayName: 'Not Before',
				name: 'notBefore',
				type: 'dateTime',
				default: '',
				description: 'The task may not be claimed before this time. With a delay too, the later time wins.',
			},
			{
				displayName: 'Notify Consumers',
				name: 'notify',
				type: 'options',
				options: [
					{
						name: 'After Commit',
						value: 'after',
						description:
							'Commit first, then notify in a second statement: many concurrent single-task producers no longer commit one at a time (one more round trip)',
					},
					{
						name: 'None (Consumers Poll)',
						value: 'none',
						description: 'No notification: triggers pick the task up at their next poll',
					},
					{
						name: 'On Commit',
						value: 'commit',
						description: 'Notify inside the transaction, delivered at its commit (each notifying commit takes a database-wide lock through its WAL flush)',
					},
				],
				default: 'commit',
				description: 'How listening Priority Dequeue Triggers are woken. Taken from the first item. See docs/queue.md, "Notifications".',
			},
		],
	},
];
