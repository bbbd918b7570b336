/**
 * Reconcile Unknown's outputs per node version.
 *
 * Versions 1 and 2 change their outputs with the Operation (Claim: To Check; Resolve: one per
 * result), so the editor redraws the node when the Operation changes and drops the connections of
 * the outputs that went away; switching back does not bring them back. Version 3 (the default)
 * has one fixed list for both operations, so switching never drops a connection:
 *
 *   0 Unrecorded · 1 To Check (Claim) · 2..6 Resolve's results in RESOLVE_OUTPUTS order
 *
 * Each operation fills only its own outputs; the other operation's stay empty. To Check and
 * Resolve's outputs never share an index, so an item Claim emits can never arrive on a Resolve
 * output (or the reverse) whatever the Operation was when a connection was drawn.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import { CLAIM_OUTPUT_LABEL, RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS, outputLabels } from '../../src/ledger/states';
import { FAIL_CLOSED_VERSION, NOT_RECORDED, outputLayout, type OutputLayout } from '../shared/outputs';

/** The node version from which the outputs are the same for Claim and Resolve. */
export const FIXED_OUTPUTS_VERSION = 3;

/** Version 3's outputs, in order (display names). */
export const FIXED_OUTPUT_NAMES: readonly string[] = [NOT_RECORDED, CLAIM_OUTPUT_LABEL, ...outputLabels(RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS)];

const output = (label: string) => `{ "type": "main", "displayName": ${JSON.stringify(label)} }`;
const list = (names: readonly string[]) => `[${names.map(output).join(', ')}]`;
const RESOLVE_NAMES = outputLabels(RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS);

/**
 * The node's `outputs` expression: version 3 and later the fixed list; version 2 Unrecorded then
 * the operation's outputs; version 1 the operation's outputs only.
 */
export const RECONCILE_OUTPUTS: `={{${string}}}` = `={{ $nodeVersion >= ${FIXED_OUTPUTS_VERSION} ? ${list(FIXED_OUTPUT_NAMES)} : ($nodeVersion >= ${FAIL_CLOSED_VERSION} ? [${output(NOT_RECORDED)}] : []).concat($parameter["operation"] === "resolve" ? ${list(RESOLVE_NAMES)} : [${output(CLAIM_OUTPUT_LABEL)}]) }}`;

/**
 * Where the executing node's items go for `operation` (see OutputLayout in nodes/shared/outputs.ts):
 * version 3: Unrecorded 0, Claim's To Check at 1, Resolve's results from 2, seven outputs in all;
 * versions 1 and 2 as before.
 */
export function reconcileLayout(fns: IExecuteFunctions, operation: 'claim' | 'resolve'): OutputLayout {
	if ((fns.getNode().typeVersion ?? 1) >= FIXED_OUTPUTS_VERSION) {
		return { notRecorded: 0, offset: operation === 'claim' ? 1 : 2, count: FIXED_OUTPUT_NAMES.length };
	}
	return operation === 'claim' ? outputLayout(fns, 1, -1) : outputLayout(fns, RESOLVE_OUTPUTS.length, RESOLVE_OUTPUTS.indexOf('claim_lost'));
}
