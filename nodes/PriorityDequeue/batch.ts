/**
 * The shape of the Priority Dequeue operations that send a whole batch in one call (pause, resume,
 * cancel, settle by ID, and through settle.ts complete, fail, extend lease, release): validate every
 * item, one round trip for the valid ones, one output item per input item with the outcome on it.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import type { LedgerPool as Pool } from '../../src/db/pool';
import type { Bounds } from '../../src/db/bounds';
import type { LedgerSchema } from '../../src/db/identifiers';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import { asJson } from './common';

/**
 * `prepare(i, item)` checks item i and returns its input (an item it refuses is not sent: with
 * Continue On Fail it becomes an error item, otherwise the node fails, as prepareItems); `call` sends the inputs of the valid items in one call and answers one
 * result per input, in order. `what` names the operation in the error items of a failed call
 * (every sent item gets one: batchFailure). `omit`: result fields left out of the output items.
 */
export async function runBatch<In, Out extends object>(
	fns: IExecuteFunctions,
	items: INodeExecutionData[],
	what: string,
	prepare: (i: number, item: INodeExecutionData) => In,
	/** `bounds`: the credential's statement and lock timeouts (src/db/bounds.ts). */
	call: (pool: Pool, schema: LedgerSchema, inputs: In[], bounds: Bounds) => Promise<Out[]>,
	omit: string[] = [],
): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(fns, items, prepare);
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(fns);
		const results = await call(pool, schema, prepared.map((p) => p.value), bounds);
		results.forEach((r, k) => out.push({ json: asJson(r, omit), pairedItem: { item: prepared[k].index } }));
	} catch (e) {
		out.push(...batchFailure(fns, e, what, prepared.map((p) => p.index)));
	}
	return [out];
}
