/** Priority Dequeue, operation "resume": its entry in the Operation list, its parameters (Pause's) and its execute. */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { asJson, type QueueOperation } from './common';
import { pauseFields, pauseInput } from './pause.operation';
import { resume } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';

/** Every item's resume in one call, one output item per input item (outcome in `outcome`). */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, items, (i) => pauseInput(this, i));
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		const results = await resume(pool, schema, prepared.map((p) => p.value), bounds);
		results.forEach((r, k) => out.push({ json: asJson(r), pairedItem: { item: prepared[k].index } }));
	} catch (e) {
		out.push(...batchFailure(this, e, 'Resume', prepared.map((p) => p.index)));
	}
	return [out];
}

export const resumeOperation: QueueOperation = {
	resource: 'queue',
	option: {
		name: 'Resume',
		action: 'Resume a paused queue or priority group',
		description: 'End the pause of the queue, or of one priority group (with a reason and who); the queue\'s triggers wake at once',
	},
	description: pauseFields,
	execute,
};
