/**
 * The one operation shape of every node (after n8n's Postgres v2 node): a node folder holds
 * `router.ts` with a map from operation value to its `<op>.operation.ts` module, and each module
 * exports one NodeOperation: the entry in the node's Operation list, the operation's own
 * parameters (description) and its execute. The router derives the Operation list and the
 * parameter list from the map, and dispatches on the `operation` parameter. A node with a single
 * operation (Reserve, Confirm, Guarded HTTP Request) has a map of one and no Operation parameter. CONTRIBUTING.md has the
 * recipe for a new operation.
 */
import {
	NodeOperationError,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeProperties,
	type INodePropertyOptions,
} from 'n8n-workflow';

/** One operation of a node. Its name (the Operation value) is its key in the router's map, nowhere else. */
export interface NodeOperation {
	/** Its entry in the node's Operation list, without the value: the router adds the map key. */
	option: Omit<INodePropertyOptions, 'value'> & { action: string; description: string };
	/**
	 * Its own parameters, without the `operation` display condition: the router adds
	 * `operation: [<its key>]` (other conditions, e.g. `{ show: { lineage: ['explicit'] } }`, stay).
	 * A parameter object listed by several operations of one map is one parameter shown for all of
	 * them, at the place of its first listing.
	 */
	description: INodeProperties[];
	/** Runs it over the node's input items; returns the node's outputs. */
	execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]>;
}

export type OperationMap<K extends string = string> = Readonly<Record<K, NodeOperation>>;

/**
 * The Operation parameter, its options derived from the map. `sort`: list them by name (n8n's
 * lint asks for alphabetical options); otherwise in map order.
 */
export function operationParameter(
	ops: OperationMap,
	defaultValue: string,
	extra: Partial<INodeProperties> = {},
	sort = true,
): INodeProperties {
	const options: INodePropertyOptions[] = Object.entries(ops).map(([value, op]) => ({ ...op.option, value }));
	if (sort) options.sort((a, b) => a.name.localeCompare(b.name));
	return { displayName: 'Operation', name: 'operation', type: 'options', noDataExpression: true, ...extra, options, default: defaultValue };
}

/**
 * Every operation's parameters, in map order, each shown for the operations (map keys, sorted)
 * that list it. A map of one (no Operation parameter) gets its parameters as they are.
 */
export function operationProperties(ops: OperationMap): INodeProperties[] {
	const entries = Object.entries(ops);
	if (entries.length === 1) return [...entries[0][1].description];
	const shownFor = new Map<INodeProperties, string[]>();
	for (const [key, op] of entries) {
		for (const p of op.description) {
			shownFor.set(p, [...(shownFor.get(p) ?? []), key]);
		}
	}
	return [...shownFor].map(([p, keys]) => ({
		...p,
		displayOptions: { ...p.displayOptions, show: { ...p.displayOptions?.show, operation: [...new Set(keys)].sort() } },
	}));
}

/**
 * Runs the operation the node's `operation` parameter names (item 0), or the only one of a map of
 * one. Throws NodeOperationError for a value the map does not hold.
 */
export async function route(fns: IExecuteFunctions, ops: OperationMap): Promise<INodeExecutionData[][]> {
	const keys = Object.keys(ops);
	const name = keys.length === 1 ? keys[0] : (fns.getNodeParameter('operation', 0) as string);
	const op = Object.prototype.hasOwnProperty.call(ops, name) ? ops[name] : undefined;
	if (!op) throw new NodeOperationError(fns.getNode(), `The operation "${name}" is not known`);
	return op.execute.call(fns, fns.getInputData());
}
