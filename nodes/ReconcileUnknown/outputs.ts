/**
 * Reconcile Unknown's outputs: one fixed list for both operations, so switching the Operation in
 * the editor never drops a connection:
 *
 *   0 Unrecorded · 1 To Check (Claim) · 2..6 Resolve's results in RESOLVE_OUTPUTS order
 *
 * Each operation fills only its own outputs; the other operation's stay empty. To Check and
 * Resolve's outputs never share an index, so an item Claim emits can never arrive on a Resolve
 * output (or the reverse) whatever the Operation was when a connection was drawn. Unrecorded comes
 * first (nodes/shared/outputs.ts).
 */
import { CLAIM_OUTPUT_LABEL, RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS, outputLabels, type ResolveOutput } from '../../src/ledger/states';
import { failClosedOutputs } from '../shared/outputs';

/** The outputs after Unrecorded, in order (display names). */
const OUTPUT_NAMES: readonly string[] = [CLAIM_OUTPUT_LABEL, ...outputLabels(RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS)];

/** The node's `outputs`. */
export const RECONCILE_OUTPUTS = failClosedOutputs(OUTPUT_NAMES);

/** Number of outputs (Unrecorded included). */
export const OUTPUT_COUNT = RECONCILE_OUTPUTS.length;

/** Index of Claim's To Check output. */
export const TO_CHECK = 1;

/** Index of Resolve's result `r` (RESOLVE_OUTPUTS order, from 2). */
export function resolveOutput(r: ResolveOutput): number {
	return 2 + RESOLVE_OUTPUTS.indexOf(r);
}
