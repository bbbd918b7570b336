/** Priority Dequeue, operation "pause": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { queueField, type QueueOperation } from './common';
import { pause, preparePauseInput, type PauseInput } from '../../src/queue';
import { runBatch } from './batch';
import { TEXT_LIMITS } from '../shared/limits';

/** The parameters of Pause, which Resume lists too (one parameter shown for both). */
export const pauseFields: INodeProperties[] = [
	queueField(),
	{
		displayName: 'Priority Group',
		name: 'pauseGroup',
		type: 'string',
		default: '',
		description: 'One priority group of the queue (as the consumers\' Priority Groups name it); empty: the whole queue',
	},
	{
		displayName: 'Reason',
		name: 'pauseReason',
		type: 'string',
		default: '',
		description: `Why, recorded with the pause or resume (up to ${TEXT_LIMITS.maxPauseReasonLength} characters)`,
	},
	{
		displayName: 'By',
		name: 'pausedBy',
		type: 'string',
		default: '',
		description: `Who asked, recorded with the pause or resume (up to ${TEXT_LIMITS.maxPausedByLength} characters), for example the form user`,
	},
];

/** Each item's raw Pause / Resume input (checked by preparePauseInput). */
export function pauseInput(ctx: IExecuteFunctions, i: number): PauseInput {
	return preparePauseInput({
		queue: ctx.getNodeParameter('queue', i) as string,
		group: ctx.getNodeParameter('pauseGroup', i, '') as string,
		reason: ctx.getNodeParameter('pauseReason', i, '') as string,
		by: ctx.getNodeParameter('pausedBy', i, '') as string,
	});
}

/**
 * The execute of Pause and of Resume (`call`: pause or resume; `label`: the operation's name in a
 * batch error): every valid item in one call, one output item per input item (outcome in `outcome`).
 */
export function pauseLikeExecute(call: (...args: Parameters<typeof pause>) => Promise<object[]>, label: string): QueueOperation['execute'] {
	return function execute(this: IExecuteFunctions, items: INodeExecutionData[]) {
		return runBatch(this, items, label, (i) => pauseInput(this, i), call);
	};
}

export const pauseOperation: QueueOperation = {
	resource: 'queue',
	option: {
		name: 'Pause',
		action: 'Pause a queue or priority group',
		description:
			'Stop claims of the queue, or of one priority group, until Resume (with a reason and who); enqueues are still taken and leases already held keep working',
	},
	description: pauseFields,
	execute: pauseLikeExecute(pause, 'Pause'),
};
