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

/** One operation of a node. */
export interface NodeOperation {
	/** Its entry in the node's Operation list (value = the key in the router's map). */
	option: INodePropertyOptions & { action: string; description: string };
	/** Its own parameters (each shown for this operation through displayOptions). */
	description: INodeProperties[];
	/** Runs it over the node's input items; returns the node's outputs. */
	execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]>;
}

export type OperationMap<K extends string = string> = Readonly<Record<K, NodeOperation>>;

/** displayOptions that show a parameter for the given operations only. */
export const showFor = <Op extends string>(...operation: Op[]) => ({ show: { operation } });

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
	const options = Object.values(ops).map((op) => op.option);
	if (sort) options.sort((a, b) => a.name.localeCompare(b.name));
	return { displayName: 'Operation', name: 'operation', type: 'options', noDataExpression: true, ...extra, options, default: defaultValue };
}

/** Every operation's parameters, in map order. */
export function operationProperties(ops: OperationMap): INodeProperties[] {
	return Object.values(ops).flatMap((op) => op.description);
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
