import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { checkQueueName, purge, type PurgeOptions } from '../../../../src/queue';
import { getLedgerConnection } from '../../../shared/connection';
import { batchFailure, prepareItems } from '../../../shared/items';
import { asJson } from '../common';

const DAY = 86_400;

/** One bounded retention pass per execution (item 0's parameters). */
export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const { prepared, errorItems } = prepareItems(this, items.slice(0, 1), (i): PurgeOptions => {
		const queue = (this.getNodeParameter('queue', i, '') as string).trim();
		const dead = Number(this.getNodeParameter('deadRetentionDays', i, 30));
		const archive = Number(this.getNodeParameter('archiveRetentionDays', i, 14));
		return {
			queue: queue ? checkQueueName(queue) : null,
			deadAfterSeconds: dead < 0 ? null : dead * DAY,
			archiveAfterSeconds: archive < 0 ? null : archive * DAY,
		};
	});
	if (prepared.length === 0) return [errorItems];
	try {
		const { pool, config } = await getLedgerConnection(this);
		const r = await purge(pool, config.schema, prepared[0].value);
		return [[{ json: asJson({ queue: prepared[0].value.queue ?? null, ...r }), pairedItem: { item: 0 } }]];
	} catch (e) {
		return [batchFailure(this, e, 'Purge', [0])];
	}
}
