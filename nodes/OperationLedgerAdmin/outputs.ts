/**
 * Operation Ledger Admin's outputs per node version.
 *
 * Version 1 changes its outputs with the Operation: Settle by Hand has [Unrecorded, Settled,
 * Refused], every other operation [Unrecorded, Result]. The editor redraws the node when the
 * Operation changes and drops the connection of an output that went away (Refused, when Settle
 * becomes Get); switching back does not bring it back. Version 2 (the default) has one fixed list
 * for every operation, so switching never drops a connection:
 *
 *   0 Unrecorded · 1 Result (Get, List, Health, Compact, Hard Delete) · 2 Settled · 3 Refused
 *
 * Each operation fills only its own outputs; the others stay empty. Result and Settle's outputs
 * never share an index, so a look-up's Result can never arrive on Settled (the go-ahead) whatever
 * the Operation was when a connection was drawn. Both versions put Unrecorded first (nodes/shared/outputs.ts).
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import { ADMIN_RESULT_LABEL, SETTLE_OUTPUTS, SETTLE_OUTPUT_LABELS, outputLabels } from '../../src/ledger/states';
import { NOT_RECORDED } from '../shared/outputs';

/** The node version from which the outputs are the same for every operation. */
export const FIXED_OUTPUTS_VERSION = 2;

const SETTLE_NAMES = outputLabels(SETTLE_OUTPUTS, SETTLE_OUTPUT_LABELS);

/** Version 2's outputs, in order (display names). */
export const FIXED_OUTPUT_NAMES: readonly string[] = [NOT_RECORDED, ADMIN_RESULT_LABEL, ...SETTLE_NAMES];

const output = (label: string) => `{ "type": "main", "displayName": ${JSON.stringify(label)} }`;
const list = (names: readonly string[]) => `[${names.map(output).join(', ')}]`;

/**
 * The node's `outputs` expression: version 2 and later the fixed list; version 1 Unrecorded then
 * Settled and Refused for Settle by Hand, Unrecorded then Result for the others.
 */
export const ADMIN_OUTPUTS: `={{${string}}}` = `={{ $nodeVersion >= ${FIXED_OUTPUTS_VERSION} ? ${list(FIXED_OUTPUT_NAMES)} : ($parameter["operation"] === "settle" ? ${list([NOT_RECORDED, ...SETTLE_NAMES])} : ${list([NOT_RECORDED, ADMIN_RESULT_LABEL])}) }}`;

/**
 * Places an operation's outputs (as it returns them: [Unrecorded, Settled, Refused] for
 * `settle`, [Unrecorded, Result] for the others, the version 1 layout) at the executing node's
 * indexes: unchanged in version 1; in version 2 the four fixed outputs, with the outputs this
 * operation does not use left empty. Throws if an operation returned another number of outputs
 * (a programming error, never an item's).
 */
export function placeAdminOutputs(fns: IExecuteFunctions, operation: string, outputs: INodeExecutionData[][]): INodeExecutionData[][] {
	const settle = operation === 'settle';
	const expected = settle ? 1 + SETTLE_NAMES.length : 2;
	if (outputs.length !== expected) {
		throw new NodeOperationError(fns.getNode(), `Operation Ledger Admin (${operation}) returned ${outputs.length} outputs, expected ${expected}`);
	}
	if ((fns.getNode().typeVersion ?? 1) < FIXED_OUTPUTS_VERSION) return outputs;
	const [unrecorded, ...rest] = outputs;
	return settle ? [unrecorded, [], ...rest] : [unrecorded, rest[0], ...SETTLE_NAMES.map(() => [])];
}
