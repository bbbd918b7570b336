/** Priority Dequeue, operation "pause": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, queueField, type QueueOperation } from './common';
import { pause, preparePauseInput, type PauseInput } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
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
 * batch error): every valid item in one call, one output item per input item (outcome in
 * `outcome`); an item with bad input gets its error item and is not sent.
 */
export function pauseLikeExecute(
	call: (...args: Parameters<typeof pause>) => Promise<object[]>,
	label: string,
): QueueOperation['execute'] {
	return async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
		const out: INodeExecutionData[] = [];
		const { prepared, errorItems } = prepareItems(this, items, (i) => pauseInput(this, i));
		out.push(...errorItems);
		if (prepared.length === 0) return [out];
		try {
			const { pool, schema, bounds } = await getLedgerConnection(this);
			const results = await call(pool, schema, prepared.map((p) => p.value), bounds);
			results.forEach((r, k) => out.push({ json: asJson(r), pairedItem: { item: prepared[k].index } }));
		} catch (e) {
			out.push(...batchFailure(this, e, label, prepared.map((p) => p.index)));
		}
		return [out];
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
