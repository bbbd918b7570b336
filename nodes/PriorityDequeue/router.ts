/**
 * Routes an execution to its operation. Adding an operation: one folder under actions/ and one
 * line here.
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import { isErrorItem } from '../shared/items';
import { isFailClosed, outputLayout, placeErrorItems } from '../shared/outputs';
import type { OperationName, QueueOperation } from './actions/common';
import { completeOperation } from './actions/complete';
import { dequeueOperation } from './actions/dequeue';
import { enqueueOperation } from './actions/enqueue';
import { extendLeaseOperation } from './actions/extendLease';
import { failOperation } from './actions/fail';
import { purgeOperation } from './actions/purge';
import { releaseOperation } from './actions/release';
import { requeueDeadOperation } from './actions/requeueDead';
import { statsOperation } from './actions/stats';

export const operations: Record<OperationName, QueueOperation> = {
	enqueue: enqueueOperation,
	dequeue: dequeueOperation,
	complete: completeOperation,
	fail: failOperation,
	extendLease: extendLeaseOperation,
	release: releaseOperation,
	requeueDead: requeueDeadOperation,
	stats: statsOperation,
	purge: purgeOperation,
};

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const name = this.getNodeParameter('operation', 0) as OperationName;
	const op = operations[name];
	if (!op) throw new NodeOperationError(this.getNode(), `The operation "${name}" is not known`);
	const [out] = await op.execute.call(this, items);
	// Items out in input order (stable: several items of one input keep their order).
	const pos = (it: INodeExecutionData) => (typeof it.pairedItem === 'object' && !Array.isArray(it.pairedItem) ? it.pairedItem.item : 0);
	const sorted = out.map((it, k) => [it, k] as const).sort((a, b) => pos(a[0]) - pos(b[0]) || a[1] - b[1]).map(([it]) => it);
	// Version 1: one output, error items in input order among the results (see placeErrorItems).
	// Version 2: [Not Recorded, result].
	if (!isFailClosed(this)) return [sorted];
	const layout = outputLayout(this, 1, -1);
	const outputs: INodeExecutionData[][] = Array.from({ length: layout.count }, () => []);
	placeErrorItems(this, outputs, layout, sorted.filter(isErrorItem));
	outputs[layout.offset].push(...sorted.filter((it) => !isErrorItem(it)));
	return outputs;
}
