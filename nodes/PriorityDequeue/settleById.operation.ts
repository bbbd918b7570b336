/** Priority Dequeue, operation "settleById": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { queueField, type QueueOperation } from './common';
import { prepareSettleByIdInput, settleById, type OperatorAction } from '../../src/queue';
import { runBatch } from './batch';
import { jsonParameter } from '../shared/context';
import { TEXT_LIMITS } from '../shared/limits';

const later = { show: { settleAction: ['retry', 'reschedule'] } };

const description: INodeProperties[] = [
	queueField(),
	{
		displayName: 'Task ID',
		name: 'taskId',
		type: 'string',
		default: '={{ $json.taskId }}',
		required: true,
		description: 'The task of the queue whose ID each input item gives (a task of another queue is not found). No lease token is needed.',
	},
	{
		displayName: 'Action',
		name: 'settleAction',
		type: 'options',
		options: [
			{ name: 'Complete', value: 'complete', description: 'Mark it succeeded with a result (also a dead task)' },
			{ name: 'Fail (Dead)', value: 'fail', description: 'Send it dead now, with the reason as its last error' },
			{ name: 'Fail (Retry)', value: 'retry', description: 'Let it run again at Run At, with the reason as its last error (dead at max attempts)' },
			{ name: 'Reschedule', value: 'reschedule', description: 'Let it run again at Run At, attempts and last error kept' },
		],
		default: 'complete',
		description: 'A task held by a lease is acted on at once; its holder\'s next settle answers lease_lost',
	},
	{
		displayName: 'Result',
		name: 'result',
		type: 'json',
		default: '{}',
		description: 'JSON kept with the archived task',
		displayOptions: { show: { settleAction: ['complete'] } },
	},
	{
		displayName: 'Run At',
		name: 'runAt',
		type: 'string',
		default: '',
		placeholder: 'e.g. 2030-12-01T10:00:00Z',
		description: 'When the task may run again: ISO-8601 (no offset = UTC). Empty or past: now, by the queue\'s clock.',
		displayOptions: later,
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		description: `Why, recorded with the task (up to ${TEXT_LIMITS.maxSettleByIdReasonLength} characters)`,
	},
	{
		displayName: 'Settled By',
		name: 'settledBy',
		type: 'string',
		default: '',
		description: `Who, recorded with the task (up to ${TEXT_LIMITS.maxSettleByIdByLength} characters), for example the form user`,
	},
];

/** Every item's task in one call, one output item per input item (outcome in `outcome`). */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	return runBatch(
		this,
		items,
		'Settle by ID',
		(i) => {
			const action = this.getNodeParameter('settleAction', i, 'complete') as OperatorAction;
			return prepareSettleByIdInput({
				queue: this.getNodeParameter('queue', i) as string,
				taskId: this.getNodeParameter('taskId', i) as string,
				action,
				result: action === 'complete' ? jsonParameter(this, this.getNodeParameter('result', i, '{}'), 'The result', i, true, 'last-wins') : undefined,
				runAt: action === 'retry' || action === 'reschedule' ? (this.getNodeParameter('runAt', i, '') as string) : null,
				reason: this.getNodeParameter('reason', i, '') as string,
				settledBy: this.getNodeParameter('settledBy', i, '') as string,
			});
		},
		settleById,
	);
}

export const settleByIdOperation: QueueOperation = {
	resource: 'task',
	option: {
		name: 'Settle by ID',
		action: 'Settle a task by ID',
		description: 'Complete, fail or reschedule a task by its ID without its lease, recording who and why (an operator\'s action)',
	},
	description,
	execute,
};
