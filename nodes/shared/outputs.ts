/**
 * Output layout per node version: where items the database did not decide go.
 *
 * Version 2 (the default for new nodes) fails closed: output 0 is "Unrecorded", an output that
 * must lead to nothing that writes. Validation errors, database errors and every item n8n itself
 * makes up land there: n8n puts the empty item of *Always Output Data* on output 0, and under *On
 * Error: Continue (regular output)* an error item stays on the output the node chose. The go-ahead
 * outputs (Reserve's Proceed, Confirm's Succeeded, Reconcile's To Check, Happened and Did Not
 * Happen, Dequeue's claimed tasks) come after it, so an item reaches them only when the database
 * decided it in this run.
 *
 * Version 1 keeps its outputs so saved workflows keep working, but an error item goes to the node's
 * last output that is not a go-ahead (e.g. Reserve's Failed Before) instead of output 0. A
 * version 1 node whose only output is a go-ahead (Dequeue's Dequeue, Reconcile's Claim) has nowhere
 * else to put them. Version 1 cannot keep *Always Output Data*'s empty item off output 0 either
 * (n8n adds it whenever output 0 is empty): use version 2.
 *
 * n8n's own nodes put error items on output 0; this package deliberately does not.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

/** Display name of output 0 in node version 2. */
export const NOT_RECORDED = 'Unrecorded';

/** The node version from which output 0 is Unrecorded. */
export const FAIL_CLOSED_VERSION = 2;

/**
 * An n8n `outputs` expression that gives `v1` (display names) to node version 1 and
 * `[Unrecorded, ...v2]` to version 2 and later. `$nodeVersion` is the node's typeVersion.
 */
export function versionedOutputs(v1: string[], v2: string[]): `={{${string}}}` {
	const list = (names: string[]) => `[${names.map((n) => `{ "type": "main", "displayName": ${JSON.stringify(n)} }`).join(', ')}]`;
	return `={{ $nodeVersion >= ${FAIL_CLOSED_VERSION} ? ${list([NOT_RECORDED, ...v2])} : ${list(v1)} }}`;
}

/** True when the executing node is version 2 or later (fail-closed layout). */
export function isFailClosed(fns: IExecuteFunctions): boolean {
	return (fns.getNode().typeVersion ?? 1) >= FAIL_CLOSED_VERSION;
}

/**
 * Where the executing node's results go.
 * - `notRecorded`: output index for error items (0 in v2; the given v1 index in v1, or -1 when a
 *   v1 node has no output that is not a go-ahead).
 * - `offset`: added to a v1 result output index to get the index in this version.
 * - `count`: number of outputs in this version.
 */
export interface OutputLayout {
	notRecorded: number;
	offset: number;
	count: number;
}

/** Layout for a node with `v1Count` outputs in v1 whose error items go to `v1ErrorOutput` (-1: none). */
export function outputLayout(fns: IExecuteFunctions, v1Count: number, v1ErrorOutput: number): OutputLayout {
	return isFailClosed(fns) ? { notRecorded: 0, offset: 1, count: v1Count + 1 } : { notRecorded: v1ErrorOutput, offset: 0, count: v1Count };
}

/**
 * Places error items (each carrying `json.error`) on the layout's Unrecorded output. A version 1
 * node without such an output (Dequeue's Dequeue, Reconcile's Claim) can only put them on output
 * 0: under *Continue (using error output)* n8n moves them to the error output before anything
 * downstream runs; under *Continue (regular output)* they stay there, recognisable by `json.error`
 * (throwing instead would be worse: n8n then passes the input items on output 0). Use version 2.
 */
export function placeErrorItems(
	fns: IExecuteFunctions,
	outputs: INodeExecutionData[][],
	layout: OutputLayout,
	errorItems: INodeExecutionData[],
): void {
	void fns;
	outputs[Math.max(layout.notRecorded, 0)].push(...errorItems);
}
