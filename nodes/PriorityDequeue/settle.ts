/**
 * The shape every settle operation (complete, fail, extend lease, release) shares: validate all
 * items, one round trip for the batch, one output item per input item with the outcome on it.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import type { LedgerPool as Pool } from '../../src/db/pool';
import type { Bounds } from '../../src/db/bounds';
import type { LedgerSchema } from '../../src/db/identifiers';
import type { SettleResult } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import { asJson, taskOf } from './common';

export async function runSettle<In, Out extends SettleResult>(
	fns: IExecuteFunctions,
	items: INodeExecutionData[],
	what: string,
	prepare: (i: number, task: { taskId: string; leaseToken: string }) => In,
	/** `bounds`: the credential's statement and lock timeouts (src/db/bounds.ts). */
	call: (pool: Pool, schema: LedgerSchema, inputs: In[], bounds: Bounds) => Promise<Out[]>,
): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(fns, items, (i, item) => prepare(i, taskOf(fns, i, item)));
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(fns);
		const results = await call(pool, schema, prepared.map((p) => p.value), bounds);
		results.forEach((r, k) => out.push({ json: asJson(r, ['index']), pairedItem: { item: prepared[k].index } }));
	} catch (e) {
		out.push(...batchFailure(fns, e, what, prepared.map((p) => p.index)));
	}
	return [out];
}
