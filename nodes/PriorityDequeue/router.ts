/**
 * Routes an execution to its operation. The Operation lists (per resource) and the parameters derive
 * from the map below; adding an operation is one `<op>.operation.ts` and one line here
 * (CONTRIBUTING.md has the whole recipe).
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import { isErrorItem } from '../shared/items';
import { UNRECORDED } from '../shared/outputs';
import type { QueueOperation } from './common';
import { cancelOperation } from './cancel.operation';
import { completeOperation } from './complete.operation';
import { dequeueOperation } from './dequeue.operation';
import { enqueueOperation } from './enqueue.operation';
import { extendLeaseOperation } from './extendLease.operation';
import { failOperation } from './fail.operation';
import { nextDueOperation } from './nextDue.operation';
import { pauseOperation } from './pause.operation';
import { purgeOperation } from './purge.operation';
import { releaseOperation } from './release.operation';
import { requeueDeadOperation } from './requeueDead.operation';
import { resumeOperation } from './resume.operation';
import { settleByIdOperation } from './settleById.operation';
import { statsOperation } from './stats.operation';

export const operations = {
	enqueue: enqueueOperation,
	dequeue: dequeueOperation,
	complete: completeOperation,
	fail: failOperation,
	extendLease: extendLeaseOperation,
	release: releaseOperation,
	requeueDead: requeueDeadOperation,
	cancel: cancelOperation,
	settleById: settleByIdOperation,
	stats: statsOperation,
	purge: purgeOperation,
	pause: pauseOperation,
	resume: resumeOperation,
	nextDue: nextDueOperation,
} satisfies Record<string, QueueOperation>;

/** The operations of one resource, for its Operation list. */
export function operationsOf(resource: QueueOperation['resource']): Record<string, QueueOperation> {
	return Object.fromEntries(Object.entries(operations).filter(([, op]) => op.resource === resource));
}

/** Index of the result output (after Unrecorded). */
const RESULT = 1;

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const name = this.getNodeParameter('operation', 0) as keyof typeof operations;
	const op = Object.prototype.hasOwnProperty.call(operations, name) ? operations[name] : undefined;
	if (!op) throw new NodeOperationError(this.getNode(), `The operation "${name}" is not known`);
	const [out] = await op.execute.call(this, items);
	// Items out in input order (stable: several items of one input keep their order).
	const pos = (it: INodeExecutionData) => (typeof it.pairedItem === 'object' && !Array.isArray(it.pairedItem) ? it.pairedItem.item : 0);
	const sorted = out.map((it, k) => [it, k] as const).sort((a, b) => pos(a[0]) - pos(b[0]) || a[1] - b[1]).map(([it]) => it);
	// [Unrecorded, result]: error items on Unrecorded, results on the result output (nodes/shared/outputs.ts).
	const outputs: INodeExecutionData[][] = [[], []];
	outputs[UNRECORDED].push(...sorted.filter(isErrorItem));
	outputs[RESULT].push(...sorted.filter((it) => !isErrorItem(it)));
	return outputs;
}
