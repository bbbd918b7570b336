/**
 * Reconcile Unknown's operations: one `<op>.operation.ts` each; the Operation list, the parameters
 * and the dispatch derive from this map (nodes/shared/router.ts).
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { route, type OperationMap } from '../shared/router';
import { claimOperation } from './claim.operation';
import { resolveOperation } from './resolve.operation';

export const operations = { claim: claimOperation, resolve: resolveOperation } satisfies OperationMap;

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	return route(this, operations);
}
