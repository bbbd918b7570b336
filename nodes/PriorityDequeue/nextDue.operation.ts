/**
 * Priority Dequeue, operation "Next Due" (resource Queue): when the queue next has claimable work.
 * Read-only. The first operation added by the recipe in CONTRIBUTING.md: SQL
 * schema/functions/queue/queue_wake_state.sql (queue_next_due for every group), core
 * src/queue/nextDue.ts, this file, one line in router.ts.
 */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { checkQueueName, nextDue } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import { asJson, queueField, type QueueOperation } from './common';

const description: INodeProperties[] = [queueField()];

/** One output item per input item: `{ queue, dueAt, due, inMs }` for the queue that item names. */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, items, (i) => checkQueueName(this.getNodeParameter('queue', i)));
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		for (const p of prepared) {
			const due = await nextDue(pool, schema, p.value, bounds);
			out.push({ json: { queue: p.value, ...asJson(due) }, pairedItem: { item: p.index } });
		}
	} catch (e) {
		out.push(...batchFailure(this, e, 'Next Due', prepared.map((p) => p.index)));
	}
	return [out];
}

export const nextDueOperation: QueueOperation = {
	resource: 'queue',
	option: {
		name: 'Next Due',
		action: 'Get when work is next due',
		description: 'When the queue next has a task to claim (ready now, a delayed task, or an expiring lease)',
	},
	description,
	execute,
};
