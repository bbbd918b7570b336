/**
 * Fail-closed outputs: where items the database did not decide go.
 *
 * Output 0 of every action node is "Unrecorded", an output that must lead to nothing that writes.
 * Validation errors, database errors and every item n8n itself makes up land there: n8n puts the
 * empty item of *Always Output Data* and pinned data on output 0, and under *On Error: Continue
 * (regular output)* an error item stays on the output the node chose. The go-ahead outputs
 * (Reserve's Proceed, Confirm's Succeeded, Reconcile's To Check, Succeeded (happened) and Failed
 * (did not happen), Dequeue's claimed tasks, the Admin node's Settled) come after it, so an item
 * reaches them only when the database decided it in this run. Because output 0 holds only error
 * items and n8n's own empty item, n8n's Retry On Fail (which retries a node whose output 0 starts
 * with an item carrying `json.error`) never mistakes a result whose input had an `error` field for
 * a failure.
 *
 * n8n's own nodes put error items on output 0; this package deliberately does not.
 */
import { NodeConnectionTypes, type INodeExecutionData, type INodeOutputConfiguration } from 'n8n-workflow';

/** Display name of output 0. */
export const NOT_RECORDED = 'Unrecorded';

/** Index of the Unrecorded output. */
export const UNRECORDED = 0;

/** A node's `outputs`: Unrecorded, then `names` (display names, in order), all main outputs. */
export function failClosedOutputs(names: readonly string[]): INodeOutputConfiguration[] {
	return [NOT_RECORDED, ...names].map((displayName) => ({ type: NodeConnectionTypes.Main, displayName }));
}

/** `count` empty output lists, to fill and return from execute. */
export function emptyOutputs(count: number): INodeExecutionData[][] {
	return Array.from({ length: count }, () => []);
}
