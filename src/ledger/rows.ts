/**
 * How the ledger's batch functions answer: one row per item, keyed by the item's index (`idx`),
 * each with the result and the operation's state after it. Read back here once for Confirm,
 * Reconcile (resolve) and Settle by Hand.
 */

/** The columns every per-item answer carries. */
export interface ItemRow<Result extends string> {
	idx: number;
	result: Result;
	status: string | null;
	attempt: number | null;
	external_ref: string | null;
}

/**
 * Pairs every item with its row and returns, in item order, `{ index, result, status, attempt,
 * externalRef }` plus what `more(row)` adds. Throws when the function `fn` returned no row for an
 * item (it broke its contract: one row per item).
 */
export function resultsByItem<R extends ItemRow<string>, Extra extends object>(
	fn: string,
	items: ReadonlyArray<{ index: number }>,
	rows: R[],
	more: (r: R) => Extra,
): Array<{ index: number; result: R['result']; status: R['status']; attempt: number | null; externalRef: string | null } & Extra> {
	const byIndex = new Map(rows.map((r) => [r.idx, r]));
	return items.map((it) => {
		const r = byIndex.get(it.index);
		if (!r) throw new Error(`${fn} returned no row for item ${it.index}`);
		return { index: it.index, result: r.result, status: r.status, attempt: r.attempt, externalRef: r.external_ref, ...more(r) };
	});
}
