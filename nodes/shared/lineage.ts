/**
 * Finds data that an upstream node of this package put on an item (e.g. the lease token Reserve
 * Operation returned) without any expression from the user: first on the item itself, else on
 * the item of the nearest upstream node of the given type that this item descends from, following
 * n8n's paired-item lineage (the same lineage `$('Node').item` uses in expressions).
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Name of the nearest enabled upstream node whose type ends with `typeSuffix`, or a named override. */
export function upstreamNodeName(fns: IExecuteFunctions, typeSuffix: string, override: string): string | undefined {
	if (override.trim()) return override.trim();
	return fns.getParentNodes(fns.getNode().name).find((n) => n.type.endsWith(typeSuffix) && !n.disabled)?.name;
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
	nodeName: string | undefined,
	field: string,
	requiredKey: string,
	what: string,
): Obj {
	const own = item.json[field];
	if (isObj(own) && typeof own[requiredKey] === 'string') return own;
	if (!nodeName) {
		throw new NodeOperationError(fns.getNode(), `No ${what} node found upstream of this node. Place this node after it, or choose "Explicit" lineage.`, {
			itemIndex: i,
		});
	}
	let json: Obj | undefined;
	try {
		json = fns.getWorkflowDataProxy(i).$(nodeName).item?.json as Obj | undefined;
	} catch (e) {
		throw new NodeOperationError(
			fns.getNode(),
			`Could not trace item ${i} back to its "${nodeName}" item (${(e as Error).message}). A node in between may have dropped item lineage; choose "Explicit" lineage.`,
			{ itemIndex: i },
		);
	}
	const found = json?.[field];
	if (!isObj(found)) {
		throw new NodeOperationError(fns.getNode(), `The "${nodeName}" item this item descends from holds no ${field} data`, { itemIndex: i });
	}
	return found;
}
