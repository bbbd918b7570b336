/**
 * Guarded HTTP Request's one operation, in the same shape as every node's (nodes/shared/router.ts):
 * a map of one, so the node has no Operation parameter.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { route, type OperationMap } from '../shared/router';
import { sendOperation } from './send.operation';

export const operations = { send: sendOperation } satisfies OperationMap;

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	return route(this, operations);
}
