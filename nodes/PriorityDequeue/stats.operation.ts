/** Priority Dequeue, operation "stats": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, queueField, type QueueOperation } from './common';
import { prepareStatsRequest, statsReport } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import { LIMITS, numberRange } from '../shared/limits';

const description: INodeProperties[] = [
	queueField(),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Include Dead Tasks',
				name: 'deadTasks',
				type: 'number',
				typeOptions: numberRange(LIMITS.statsDeadTasks),
				default: LIMITS.statsDeadTasks.default,
				description: 'How many of the most recent dead tasks to list under deadTasks (0: none)',
			},
		],
	},
];

/** One output item per input item: the stats of the queue that item names. */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, items, (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		return prepareStatsRequest({ queue: this.getNodeParameter('queue', i) as string, deadTasks: options.deadTasks as number | undefined });
	});
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		for (const p of prepared) {
			const report = await statsReport(pool, schema, p.value, bounds);
			const json: IDataObject = asJson(report.stats);
			if (report.deadTasks) json.deadTasks = asJson(report.deadTasks) as unknown as IDataObject[];
			out.push({ json, pairedItem: { item: p.index } });
		}
	} catch (e) {
		out.push(...batchFailure(this, e, 'Stats', prepared.map((p) => p.index)));
	}
	return [out];
}

export const statsOperation: QueueOperation = {
	resource: 'queue',
	option: { name: 'Stats', action: 'Get queue stats', description: 'Depth per group, oldest wait, in flight and dead' },
	description,
	execute,
};
