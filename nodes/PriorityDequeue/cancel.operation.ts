/** Priority Dequeue, operation "cancel": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { queueField, type QueueOperation } from './common';
import { cancel, prepareCancelInput } from '../../src/queue';
import { runBatch } from './batch';
import { TEXT_LIMITS } from '../shared/limits';

const byKey = { show: { cancelBy: ['dedupeKey'] } };

const description: INodeProperties[] = [
	queueField(),
	{
		displayName: 'Cancel By',
		name: 'cancelBy',
		type: 'options',
		options: [
			{ name: 'Task ID', value: 'taskId', description: 'The task of the queue whose ID each input item gives (a task of another queue is not found)' },
			{ name: 'Dedupe Key', value: 'dedupeKey', description: 'The pending or processing task of the queue that holds this dedupe key' },
		],
		default: 'taskId',
	},
	{
		displayName: 'Task ID',
		name: 'taskId',
		type: 'string',
		default: '={{ $json.taskId }}',
		required: true,
		displayOptions: { show: { cancelBy: ['taskId'] } },
	},
	{
		displayName: 'Dedupe Key',
		name: 'dedupeKey',
		type: 'string',
		default: '',
		required: true,
		description: 'The dedupe key the task was enqueued with (compared in Unicode NFC, as Enqueue does)',
		displayOptions: byKey,
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		description: `Why, recorded with the cancelled task (up to ${TEXT_LIMITS.maxCancelReasonLength} characters; empty: "cancelled")`,
	},
	{
		displayName: 'Cancelled By',
		name: 'cancelledBy',
		type: 'string',
		default: '',
		description: `Who asked, recorded with the cancelled task (up to ${TEXT_LIMITS.maxCancelledByLength} characters), for example the form user`,
	},
];

/** Every item's task in one call, one output item per input item (outcome in `outcome`). */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runBatch(
		this,
		items,
		'Cancel',
		(i) => {
			const mode = this.getNodeParameter('cancelBy', i, 'taskId') as string;
			const common = {
				queue: this.getNodeParameter('queue', i) as string,
				reason: this.getNodeParameter('reason', i, '') as string,
				cancelledBy: this.getNodeParameter('cancelledBy', i, '') as string,
			};
			return prepareCancelInput(
				mode === 'dedupeKey'
					? { ...common, dedupeKey: this.getNodeParameter('dedupeKey', i) as string }
					: { ...common, taskId: this.getNodeParameter('taskId', i) as string },
			);
		},
		cancel,
	);
}

export const cancelOperation: QueueOperation = {
	resource: 'task',
	option: {
		name: 'Cancel',
		action: 'Cancel a task',
		description: 'Stop a waiting task now, or ask the holder of a claimed one to stop, by task ID or dedupe key, with a reason',
	},
	description,
	execute,
};
