/**
 * Finds data that an upstream node of this package put on an item (e.g. the lease token Reserve
 * Operation returned) without any expression from the user: first on the item itself, else on
 * the item of the nearest upstream node of the given type that this item descends from, following
 * n8n's paired-item lineage (the same lineage `$('Node').item` uses in expressions).
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Names of the enabled upstream nodes whose type ends with `typeSuffix`, nearest first, or just
 * the named override. n8n lists parents furthest first; reversed, the nearest comes first.
 */
export function upstreamNodeNames(fns: IExecuteFunctions, typeSuffix: string, override: string): string[] {
	if (override.trim()) return [override.trim()];
	return fns
		.getParentNodes(fns.getNode().name)
		.filter((n) => n.type.endsWith(typeSuffix) && !n.disabled)
		.map((n) => n.name)
		.reverse();
}

/**
 * Returns `json[field]` of item i's lineage: from the item itself when it has `field` with
 * `requiredKey`, else from the paired item of `nodeName`. Throws NodeOperationError (with the item
 * index) when there is none, naming what to do instead.
 */
export function fieldFromLineage(
	fns: IExecuteFunctions,
	i: number,
	item: INodeExecutionData,
	nodeNames: string[],
	field: string,
	requiredKey: string,
	what: string,
): Obj {
	const own = item.json[field];
	if (isObj(own) && typeof own[requiredKey] === 'string') return own;
	// An object without the key (e.g. a Reserve item from a non-Proceed output) is returned when
	// nothing better is found, so the caller can say precisely what is wrong with it.
	let partial: Obj | undefined = isObj(own) ? own : undefined;
	if (nodeNames.length === 0) {
		if (partial) return partial;
		throw new NodeOperationError(fns.getNode(), `No ${what} node found upstream of this node. Place this node after it, or choose "Explicit" lineage.`, {
			itemIndex: i,
		});
	}
	// The nearest candidate whose paired item carries the field wins (another node of the same type
	// further up may have handled a different item, or none).
	const problems: string[] = [];
	for (const nodeName of nodeNames) {
		let json: Obj | undefined;
		try {
			json = fns.getWorkflowDataProxy(i).$(nodeName).item?.json as Obj | undefined;
		} catch (e) {
			problems.push(`"${nodeName}": ${(e as Error).message}`);
			continue;
		}
		const found = json?.[field];
		if (isObj(found) && typeof found[requiredKey] === 'string') return found;
		if (isObj(found)) partial ??= found;
		problems.push(`"${nodeName}": its item holds no ${field}.${requiredKey}`);
	}
	if (partial) return partial;
	throw new NodeOperationError(
		fns.getNode(),
		`Could not trace item ${i} back to a ${what} item (${problems.join('; ')}). A node in between may have dropped item lineage; choose "Explicit" lineage.`,
		{ itemIndex: i },
	);
}
