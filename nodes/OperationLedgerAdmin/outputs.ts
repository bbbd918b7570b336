/**
 * Operation Ledger Admin's outputs: one fixed list for every operation, so switching the Operation
 * in the editor never drops a connection:
 *
 *   0 Unrecorded · 1 Result (Get, List, Health, Compact, Hard Delete) · 2 Settled · 3 Refused
 *
 * Each operation fills only its own outputs; the others stay empty. Result and Settle's outputs
 * never share an index, so a look-up's Result can never arrive on Settled (the go-ahead) whatever
 * the Operation was when a connection was drawn. Unrecorded comes first (nodes/shared/outputs.ts).
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import { ADMIN_RESULT_LABEL, SETTLE_OUTPUTS, SETTLE_OUTPUT_LABELS, outputLabels } from '../../src/ledger/states';
import { failClosedOutputs } from '../shared/outputs';

const SETTLE_NAMES = outputLabels(SETTLE_OUTPUTS, SETTLE_OUTPUT_LABELS);

/** The node's `outputs`. */
export const ADMIN_OUTPUTS = failClosedOutputs([ADMIN_RESULT_LABEL, ...SETTLE_NAMES]);

/**
 * Places an operation's outputs (as it returns them: [Unrecorded, Settled, Refused] for `settle`,
 * [Unrecorded, Result] for the others) at the node's four fixed indexes, with the outputs this
 * operation does not use left empty. Throws if an operation returned another number of outputs (a
 * programming error, never an item's).
 */
export function placeAdminOutputs(fns: IExecuteFunctions, operation: string, outputs: INodeExecutionData[][]): INodeExecutionData[][] {
	const settle = operation === 'settle';
	const expected = settle ? 1 + SETTLE_NAMES.length : 2;
	if (outputs.length !== expected) {
		throw new NodeOperationError(fns.getNode(), `Operation Ledger Admin (${operation}) returned ${outputs.length} outputs, expected ${expected}`);
	}
	const [unrecorded, ...rest] = outputs;
	return settle ? [unrecorded, [], ...rest] : [unrecorded, rest[0], ...SETTLE_NAMES.map(() => [])];
}
