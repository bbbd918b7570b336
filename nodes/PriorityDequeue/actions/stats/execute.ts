import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { checkInt, checkQueueName, listDead, stats } from '../../../../src/queue';
import { getLedgerConnection } from '../../../shared/connection';
import { batchFailure, prepareItems } from '../../../shared/items';
import { asJson } from '../common';

/** One output item per input item: the stats of the queue that item names. */
export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, items, (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		return {
			queue: checkQueueName(this.getNodeParameter('queue', i)),
			deadTasks: checkInt(options.deadTasks ?? 0, 'Include dead tasks', 0, 1000),
		};
	});
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, config } = await getLedgerConnection(this);
		for (const p of prepared) {
			const s = await stats(pool, config.schema, p.value.queue);
			const json: IDataObject = asJson(s);
			if (p.value.deadTasks > 0) json.deadTasks = asJson(await listDead(pool, config.schema, p.value.queue, p.value.deadTasks)) as unknown as IDataObject[];
			out.push({ json, pairedItem: { item: p.index } });
		}
	} catch (e) {
		out.push(...batchFailure(this, e, 'Stats', prepared.map((p) => p.index)));
	}
	return [out];
}
