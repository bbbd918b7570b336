/**
 * Operation Ledger Admin's operations: one `<op>.operation.ts` each (Compact and Hard Delete share
 * retention.operation.ts); the Operation list, the parameters and the dispatch derive from this map
 * (nodes/shared/router.ts). The map order is the order of the parameters in the editor.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { route, type OperationMap } from '../shared/router';
import { getOperationOp } from './get.operation';
import { placeAdminOutputs } from './outputs';
import { healthOperation } from './health.operation';
import { listOperation } from './list.operation';
import { compactOperation, hardDeleteOperation } from './retention.operation';
import { settleOperation } from './settle.operation';

export const operations = {
	get: getOperationOp,
	list: listOperation,
	settle: settleOperation,
	health: healthOperation,
	hardDelete: hardDeleteOperation,
	compact: compactOperation,
} satisfies OperationMap;

/** Runs the operation, then places its outputs at the node's fixed indexes (./outputs.ts). */
export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const outputs = await route(this, operations);
	return placeAdminOutputs(this, this.getNodeParameter('operation', 0) as string, outputs);
}
