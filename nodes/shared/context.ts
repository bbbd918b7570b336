import { NodeOperationError, type IExecuteFunctions } from 'n8n-workflow';
import type { EventContext } from '../../src/ledger/states';

/** Which execution, workflow and node caused an event (recorded on every ledger event). */
export function eventContext(fns: IExecuteFunctions): EventContext {
	let workflowId: string | undefined;
	try {
		workflowId = String(fns.getWorkflow().id ?? '') || undefined;
	} catch {
		workflowId = undefined;
	}
	return { executionId: fns.getExecutionId?.() ?? undefined, workflowId, nodeName: fns.getNode().name };
}

/** Reads a `json`-type parameter: objects pass through, strings are parsed as JSON. */
export function jsonParameter(fns: IExecuteFunctions, value: unknown, what: string, itemIndex: number): unknown {
	if (typeof value !== 'string') return value;
	const text = value.trim();
	if (text === '') return null;
	try {
		return JSON.parse(text);
	} catch (e) {
		throw new NodeOperationError(fns.getNode(), `${what} is not valid JSON: ${(e as Error).message}`, { itemIndex });
	}
}
