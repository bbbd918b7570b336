import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { enqueue, validateEnqueueInput, type EnqueueInput, type NotifyMode } from '../../../../src/queue';
import { getLedgerConnection } from '../../../shared/connection';
import { jsonParameter } from '../../../shared/context';
import { batchFailure, prepareItems } from '../../../shared/items';
import { asJson } from '../common';

/** All input items in one transaction (one round trip); one output item per input item. */
export async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, items, (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		const input: EnqueueInput = {
			queue: this.getNodeParameter('queue', i) as string,
			group: this.getNodeParameter('priorityGroup', i) as string,
			payload: jsonParameter(this, this.getNodeParameter('payload', i, {}), 'The payload', i) ?? {},
			dedupeKey: (this.getNodeParameter('dedupeKey', i, '') as string) || null,
			delaySeconds: options.delaySeconds === undefined ? undefined : Number(options.delaySeconds),
			notBefore: (options.notBefore as string) || null,
			maxAttempts: options.maxAttempts === undefined ? undefined : Number(options.maxAttempts),
		};
		validateEnqueueInput(input);
		return input;
	});
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, config } = await getLedgerConnection(this);
		const first = this.getNodeParameter('options', prepared[0].index, {}) as IDataObject;
		const notify = ((first.notify as string) || 'commit') as NotifyMode;
		const results = await enqueue(pool, config.schema, prepared.map((p) => p.value), { notify });
		results.forEach((r, k) => out.push({ json: asJson(r, ['index', 'payload']), pairedItem: { item: prepared[k].index } }));
	} catch (e) {
		out.push(...batchFailure(this, e, 'Enqueue', prepared.map((p) => p.index)));
	}
	return [out];
}
