/**
 * A minimal, hand-written stand-in for n8n's IExecuteFunctions, enough to run this package's
 * nodes in unit and integration tests: parameters per item, continueOnFail, credentials, parent
 * nodes and a paired-item proxy for `$('<node>').item`; and fakePool, a pg pool that answers from a
 * script, for unit tests of one node. Written for this package; not n8n's harness.
 */
import type { IExecuteFunctions, INode, INodeExecutionData } from 'n8n-workflow';

export interface FakeOptions {
	items: INodeExecutionData[];
	/** Parameter values: a constant, or a function of the item index. Dotted names reach into collections. */
	params: Record<string, unknown | ((i: number) => unknown)>;
	credentials?: Record<string, unknown>;
	continueOnFail?: boolean;
	nodeName?: string;
	/** The node's type (default n8n-nodes-operation-ledger.test). */
	nodeType?: string;
	parents?: Array<{ name: string; type: string; disabled?: boolean }>;
	/** For `$('<name>').item`: the paired upstream item of input item i. */
	pairedFrom?: Record<string, (i: number) => INodeExecutionData | undefined>;
	executionId?: string;
	workflowId?: string;
	/** What getMode() answers (default 'trigger'; 'manual' is a run from the editor). */
	mode?: string;
	/** The node's On Error setting. */
	onError?: INode['onError'];
}

export function fakeExecute(o: FakeOptions): IExecuteFunctions {
	const node: INode = {
		id: 'node-1',
		name: o.nodeName ?? 'Node Under Test',
		type: o.nodeType ?? 'n8n-nodes-operation-ledger.test',
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
		...(o.onError ? { onError: o.onError } : {}),
	};
	const read = (name: string, i: number): unknown => {
		if (name in o.params) {
			const v = o.params[name];
			return typeof v === 'function' ? (v as (i: number) => unknown)(i) : v;
		}
		const [head, ...rest] = name.split('.');
		let v: unknown = head in o.params ? read(head, i) : undefined;
		for (const part of rest) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
		return v;
	};
	const fns = {
		getInputData: () => o.items,
		getNode: () => node,
		getNodeParameter: (name: string, i: number, ...fallback: unknown[]) => {
			const v = read(name, i);
			if (v === undefined) {
				if (fallback.length > 0) return fallback[0];
				throw new Error(`Could not get parameter "${name}"`);
			}
			return v;
		},
		continueOnFail: () => o.continueOnFail === true,
		getMode: () => o.mode ?? 'trigger',
		getCredentials: async () => o.credentials ?? {},
		getExecutionId: () => o.executionId ?? 'exec-1',
		getWorkflow: () => ({ id: o.workflowId ?? 'wf-1', name: 'test', active: false }),
		getParentNodes: () => (o.parents ?? []).map((p) => ({ ...p, typeVersion: 1, disabled: p.disabled ?? false })),
		getWorkflowDataProxy: (i: number) => ({
			$: (name: string) => {
				const from = o.pairedFrom?.[name];
				if (!from) throw new Error(`Referenced node "${name}" is unexecuted`);
				const item = from(i);
				if (!item) throw new Error(`Paired item data for item ${i} unavailable`);
				return { item };
			},
		}),
	};
	return fns as unknown as IExecuteFunctions;
}

/** Credentials pointing at the test database and schema. */
export function testCredentials(databaseUrl: string, schema: string, extra: Record<string, unknown> = {}) {
	return {
		connectionType: 'connectionString',
		connectionString: databaseUrl,
		ssl: 'disable',
		schema,
		autoApplySchema: true,
		maxConnections: 5,
		...extra,
	};
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
