/**
 * The shape every settle operation (complete, fail, extend lease, release) shares: validate all
 * items, one round trip for the batch, one output item per input item with the outcome on it.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import type { LedgerPool as Pool } from '../../src/db/pool';
import type { Bounds } from '../../src/db/bounds';
import type { LedgerSchema } from '../../src/db/identifiers';
import type { SettleResult } from '../../src/queue';
import { runBatch } from './batch';
import { taskOf } from './common';

/** runBatch for a settle: `prepare` gets the item's task id and lease token; `index` is left out of the output. */
export function runSettle<In, Out extends SettleResult>(
	fns: IExecuteFunctions,
	items: INodeExecutionData[],
	what: string,
	prepare: (i: number, task: { taskId: string; leaseToken: string }) => In,
	/** `bounds`: the credential's statement and lock timeouts (src/db/bounds.ts). */
	call: (pool: Pool, schema: LedgerSchema, inputs: In[], bounds: Bounds) => Promise<Out[]>,
): Promise<INodeExecutionData[][]> {
	return runBatch(fns, items, what, (i, item) => prepare(i, taskOf(fns, i, item)), call, ['index']);
}
