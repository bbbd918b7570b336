import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { dequeue, checkGroups, parseGroupWeights, type DequeueOptions } from '../../../../src/queue';
import { getLedgerConnection } from '../../../shared/connection';
import { batchFailure, prepareItems } from '../../../shared/items';
import { asJson } from '../common';

/** One claim per execution, read from item 0; every claimed task is paired with item 0. */
export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const { prepared, errorItems } = prepareItems(this, items.slice(0, 1), (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		const opts: DequeueOptions = {
			queue: this.getNodeParameter('queue', i) as string,
			limit: Number(this.getNodeParameter('batchSize', i)),
			leaseSeconds: Number(this.getNodeParameter('leaseSeconds', i)),
			agingSeconds: options.agingSeconds === undefined ? undefined : Number(options.agingSeconds),
			groups: checkGroups(parseGroupWeights(options.groupWeights)),
		};
		return opts;
	});
	if (prepared.length === 0) return [errorItems];
	try {
		const { pool, config } = await getLedgerConnection(this);
		const tasks = await dequeue(pool, config.schema, prepared[0].value);
		return [tasks.map((t) => ({ json: asJson(t), pairedItem: { item: 0 } }))];
	} catch (e) {
		return [batchFailure(this, e, 'Dequeue', [0])];
	}
}
