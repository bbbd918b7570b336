/**
 * A minimal, hand-written stand-in for n8n's IExecuteFunctions for the Priority Dequeue node's unit
 * tests, and a fake pg pool that records each query and answers from a script. Not n8n's harness.
 */
import type { IExecuteFunctions, INode, INodeExecutionData } from 'n8n-workflow';

export interface QueueFakeOptions {
	items: INodeExecutionData[];
	/** Parameter values: a constant, or a function of the item index. */
	params: Record<string, unknown | ((i: number) => unknown)>;
	continueOnFail?: boolean;
	parents?: Array<{ name: string; type: string; disabled?: boolean }>;
	/** For `$('<name>').item`: the paired upstream item of input item i. */
	pairedFrom?: Record<string, (i: number) => INodeExecutionData | undefined>;
	/** The node's typeVersion (default 1: one output). */
	typeVersion?: number;
	/** The node's On Error setting. */
	onError?: INode['onError'];
}

export function queueFakeExecute(o: QueueFakeOptions): IExecuteFunctions {
	const node: INode = {
		id: 'pd-1',
		name: 'Priority Dequeue',
		type: 'n8n-nodes-operation-ledger.priorityDequeue',
		typeVersion: o.typeVersion ?? 1,
		position: [0, 0],
		parameters: {},
		...(o.onError ? { onError: o.onError } : {}),
	};
	const fns = {
		getInputData: () => o.items,
		getNode: () => node,
		getNodeParameter: (name: string, i: number, ...fallback: unknown[]) => {
			if (name in o.params) {
				const v = o.params[name];
				return typeof v === 'function' ? (v as (i: number) => unknown)(i) : v;
			}
			if (fallback.length > 0) return fallback[0];
			throw new Error(`Could not get parameter "${name}"`);
		},
		continueOnFail: () => o.continueOnFail === true,
		getCredentials: async () => ({}),
		getParentNodes: () => (o.parents ?? []).map((p) => ({ ...p, typeVersion: 1, disabled: p.disabled ?? false })),
		getWorkflowDataProxy: (i: number) => ({
			$: (name: string) => {
				const from = o.pairedFrom?.[name];
				if (!from) throw new Error(`Referenced node "${name}" is unexecuted`);
				return { item: from(i) };
			},
		}),
	};
	return fns as unknown as IExecuteFunctions;
}

export interface RecordedQuery {
	text: string;
	values: unknown[];
}

/** A pool whose query() records the call and returns the next scripted rows (or throws the scripted error). */
export function fakePool(script: Array<Array<Record<string, unknown>> | Error>) {
	const calls: RecordedQuery[] = [];
	const pool = {
		calls,
		async query(text: string, values: unknown[] = []) {
			calls.push({ text, values });
			const next = script.shift();
			if (next instanceof Error) throw next;
			return { rows: next ?? [] };
		},
	};
	return pool;
}
