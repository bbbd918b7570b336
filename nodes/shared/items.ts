/**
 * Item plumbing shared by the nodes: validate every item first (bad input writes nothing), then
 * one database round trip for the valid ones, then route results to outputs with pairedItem set.
 *
 * continueOnFail follows n8n's own nodes: a failed item is emitted on the first output as
 * `{ json: { error: message }, pairedItem: { item: i } }`; with "On Error: Continue (using error
 * output)" n8n moves exactly those items to the error output. Without it, the first bad item
 * throws a NodeOperationError carrying its itemIndex, before anything is written.
 */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

/** An input item that passed validation, with the values prepared for the database. */
export interface Prepared<T> {
	index: number;
	value: T;
}

/** Raised by prepare functions for input the user must fix; message is shown on the item. */
export class ItemInputError extends Error {
	constructor(
		message: string,
		public readonly description?: string,
	) {
		super(message);
		this.name = 'ItemInputError';
	}
}

/**
 * Runs `prepare` for every input item. Returns the valid ones and, when continueOnFail is on, the
 * error items to emit; otherwise throws for the first invalid item.
 */
export function prepareItems<T>(
	fns: IExecuteFunctions,
	items: INodeExecutionData[],
	prepare: (index: number, item: INodeExecutionData) => T,
): { prepared: Array<Prepared<T>>; errorItems: INodeExecutionData[] } {
	const prepared: Array<Prepared<T>> = [];
	const errorItems: INodeExecutionData[] = [];
	for (let i = 0; i < items.length; i++) {
		try {
			prepared.push({ index: i, value: prepare(i, items[i]) });
		} catch (e) {
			const err = e as Error;
			if (fns.continueOnFail()) {
				errorItems.push(errorItem(err.message, i));
				continue;
			}
			if (err instanceof NodeOperationError) throw err;
			throw new NodeOperationError(fns.getNode(), err.message, {
				itemIndex: i,
				description: (err as ItemInputError).description,
			});
		}
	}
	return { prepared, errorItems };
}

/** The item n8n's own nodes emit for a failed item under continueOnFail. */
export function errorItem(message: string, index: number): INodeExecutionData {
	return { json: { error: message }, pairedItem: { item: index } };
}

/**
 * Wraps a failure of the batch's database call. Nothing of the batch was recorded (it is one
 * transaction), so every item is either failed (continueOnFail) or the node throws.
 */
export function batchFailure(
	fns: IExecuteFunctions,
	e: unknown,
	what: string,
	indexes: number[],
): INodeExecutionData[] {
	const err = e as Error & { code?: string };
	const message = `${what} failed and nothing of this batch was recorded (${indexes.length} item(s)): ${err.message}`;
	if (fns.continueOnFail()) return indexes.map((i) => errorItem(message, i));
	throw new NodeOperationError(fns.getNode(), message, {
		description:
			'The batch runs as one database transaction, so no item of it was written. It is safe to run the execution again once the database is reachable.',
	});
}
