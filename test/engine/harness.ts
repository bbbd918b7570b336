/**
 * Runs workflows through n8n-core's own WorkflowExecute (the pinned 2.33.2 engine), in process, with
 * the BUILT nodes from dist/ (what n8n loads) and two tiny test nodes written here:
 * - `test.source`: emits the items given in its `items` parameter (a JSON array of json objects);
 * - `test.sink`: records every item it receives, per node name, and passes them on;
 * No stand-in for IExecuteFunctions: parameters, expressions, On Error, Always Output Data, Retry On
 * Fail, Execute Once, error outputs and paired items are all the engine's.
 * Triggers are activated with n8n-core's TriggersAndPollers and TriggerContext; every emit starts an
 * execution of the workflow from the trigger (WorkflowExecute.processRunExecutionData), as n8n's
 * active-workflow manager does, and its end resolves the trigger's done promise.
 */
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type {
	ICredentialDataDecryptedObject,
	IExecuteFunctions,
	INode,
	INodeExecutionData,
	INodeType,
	INodeTypes,
	IRun,
	ITriggerFunctions,
	IWorkflowExecuteAdditionalData,
	IConnections,
	WorkflowExecuteMode,
} from 'n8n-workflow';

// n8n-core reads its settings (user folder, encryption key) when first used: keep them in a temp dir.
process.env.N8N_USER_FOLDER ??= mkdtempSync(path.join(tmpdir(), 'ol-engine-'));
process.env.N8N_LOG_LEVEL ??= 'silent';
process.env.N8N_ENCRYPTION_KEY ??= 'engine-test-key';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const core = require('n8n-core') as typeof import('n8n-core');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const wf = require('n8n-workflow') as typeof import('n8n-workflow');

export const ROOT = path.resolve(__dirname, '../..');
export const PKG = 'n8n-nodes-operation-ledger';
export const CREDENTIAL_TYPE = 'operationLedgerPostgresApi';

/** The built node classes, loaded from dist/ as n8n loads them. */
function builtNode(folder: string, cls: string): INodeType {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const mod = require(path.join(ROOT, 'dist/nodes', folder, `${folder}.node.js`)) as Record<string, new () => INodeType>;
	return new mod[cls]();
}

/** Every item a sink received, by sink node name, in arrival order (all runs of the sink). */
export type Received = Record<string, INodeExecutionData[]>;

class SourceNode implements INodeType {
	description = {
		displayName: 'Test Source',
		name: 'source',
		group: ['input'],
		version: 1,
		description: 'Emits the given items',
		defaults: { name: 'Source' },
		inputs: [],
		outputs: ['main'],
		properties: [{ displayName: 'Items', name: 'items', type: 'json', default: '[]' }],
	} as unknown as INodeType['description'];

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const raw = this.getNodeParameter('items', 0) as string | object[];
		const list = (typeof raw === 'string' ? JSON.parse(raw) : raw) as object[];
		return [list.map((json) => ({ json: json as INodeExecutionData['json'] }))];
	}
}

function sinkNode(received: Received): INodeType {
	return {
		description: {
			displayName: 'Test Sink',
			name: 'sink',
			group: ['output'],
			version: 1,
			description: 'Records what reaches it',
			defaults: { name: 'Sink' },
			inputs: ['main'],
			outputs: ['main'],
			properties: [],
		} as unknown as INodeType['description'],
		async execute(this: IExecuteFunctions) {
			const items = this.getInputData();
			(received[this.getNode().name] ??= []).push(...items);
			return [items];
		},
	};
}

/**
 * A write node like n8n's HTTP Request node with its default settings (it is not in this repo's
 * dependencies): POSTs the item's JSON without `ledger` to `url`, with the item's
 * ledger.idempotencyKey as Idempotency-Key, and emits the answer's JSON body; a non-2xx answer or
 * a network error throws (On Error: Stop Workflow), or becomes `{ error }` under Continue.
 */
class WriterNode implements INodeType {
	description = {
		displayName: 'Test Writer',
		name: 'writer',
		group: ['output'],
		version: 1,
		description: 'POSTs each item',
		defaults: { name: 'Writer' },
		inputs: ['main'],
		outputs: ['main'],
		properties: [{ displayName: 'URL', name: 'url', type: 'string', default: '' }],
	} as unknown as INodeType['description'];

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const out: INodeExecutionData[] = [];
		const items = this.getInputData();
		for (let i = 0; i < items.length; i++) {
			const { ledger, ...body } = items[i].json as { ledger?: { idempotencyKey?: string } };
			try {
				const res = await fetch(this.getNodeParameter('url', i) as string, {
					method: 'POST',
					headers: { 'content-type': 'application/json', 'idempotency-key': ledger?.idempotencyKey ?? '' },
					body: JSON.stringify(body),
					signal: AbortSignal.timeout(2000),
				});
				const json = (await res.json().catch(() => ({}))) as INodeExecutionData['json'];
				if (!res.ok) {
					if (!this.continueOnFail()) throw new wf.NodeOperationError(this.getNode(), `${res.status} - the target answered ${res.status}`, { itemIndex: i });
					out.push({ json: { error: { message: `${res.status} - the target answered ${res.status}`, httpCode: String(res.status) } }, pairedItem: { item: i } });
					continue;
				}
				out.push({ json, pairedItem: { item: i } });
			} catch (e) {
				if (!this.continueOnFail()) throw e;
				out.push({ json: { error: { message: (e as Error).message } }, pairedItem: { item: i } });
			}
		}
		return [out];
	}
}

export interface EngineOptions {
	/** Credential data by credential id. */
	credentials: Record<string, ICredentialDataDecryptedObject>;
}

/** A small engine: node types, credential lookup, and a run function. */
export class Engine {
	readonly received: Received = {};
	private readonly types: Record<string, INodeType>;
	private execCounter = 0;

	constructor(private readonly opts: EngineOptions) {
		this.types = {
			[`${PKG}.reserveOperation`]: builtNode('ReserveOperation', 'ReserveOperation'),
			[`${PKG}.confirmOperation`]: builtNode('ConfirmOperation', 'ConfirmOperation'),
			[`${PKG}.reconcileUnknown`]: builtNode('ReconcileUnknown', 'ReconcileUnknown'),
			[`${PKG}.priorityDequeue`]: builtNode('PriorityDequeue', 'PriorityDequeue'),
			[`${PKG}.operationLedgerAdmin`]: builtNode('OperationLedgerAdmin', 'OperationLedgerAdmin'),
			[`${PKG}.priorityDequeueTrigger`]: builtNode('PriorityDequeueTrigger', 'PriorityDequeueTrigger'),
			[`${PKG}.guardedHttpRequest`]: builtNode('GuardedHttpRequest', 'GuardedHttpRequest'),
			'test.source': new SourceNode(),
			'test.sink': sinkNode(this.received),
			'test.writer': new WriterNode(),
		};
	}

	nodeTypes(): INodeTypes {
		const get = (type: string) => {
			const t = this.types[type];
			if (!t) throw new Error(`unknown node type ${type}`);
			return t;
		};
		return {
			getByName: get,
			getByNameAndVersion: (type: string) => get(type),
			getKnownTypes: () => ({}),
		} as unknown as INodeTypes;
	}

	private additionalData(executionId: string, workflowData: { id: string; name: string; nodes: INode[]; connections: IConnections }, mode: WorkflowExecuteMode) {
		const creds = this.opts.credentials;
		const credentialsHelper = {
			getParentTypes: () => [],
			isCredentialUsableByNode: () => true,
			authenticate: async (_c: unknown, _t: string, r: unknown) => r,
			preAuthentication: async () => undefined,
			runPreAuthentication: async () => undefined,
			getCredentials: async () => {
				throw new Error('not used');
			},
			getDecrypted: async (_a: unknown, nodeCredentials: { id: string | null }) => {
				const c = nodeCredentials.id ? creds[nodeCredentials.id] : undefined;
				if (!c) throw new Error(`no credential ${nodeCredentials.id}`);
				return { ...c };
			},
			updateCredentials: async () => undefined,
			updateCredentialsOauthTokenData: async () => undefined,
			getCredentialsProperties: () => [],
		};
		const hooks = new core.ExecutionLifecycleHooks(mode, executionId, {
			id: workflowData.id,
			name: workflowData.name,
			active: false,
			isArchived: false,
			nodes: workflowData.nodes,
			connections: workflowData.connections,
			createdAt: new Date(),
			updatedAt: new Date(),
			activeVersionId: null,
		} as never);
		return {
			credentialsHelper,
			hooks,
			executionId,
			executeWorkflow: async () => {
				throw new Error('not used');
			},
			getRunExecutionData: async () => undefined,
			getRuntimeCredential: async () => undefined,
			currentNodeExecutionIndex: 0,
			restApiUrl: 'http://127.0.0.1/rest',
			instanceBaseUrl: 'http://127.0.0.1',
			formWaitingBaseUrl: 'http://127.0.0.1/form-waiting',
			webhookBaseUrl: 'http://127.0.0.1/webhook',
			webhookWaitingBaseUrl: 'http://127.0.0.1/webhook-waiting',
			webhookTestBaseUrl: 'http://127.0.0.1/webhook-test',
			mcpBaseUrl: 'http://127.0.0.1/mcp',
			mcpTestBaseUrl: 'http://127.0.0.1/mcp-test',
			variables: {},
			logAiEvent: () => undefined,
			workflowId: workflowData.id,
		} as unknown as IWorkflowExecuteAdditionalData;
	}

	/**
	 * Activates the trigger node `triggerName` of a workflow as n8n does for an active workflow
	 * (mode 'trigger', activation 'activate'). Every emit is counted and starts an execution from the
	 * trigger with the emitted items; the finished run resolves the trigger's done promise. Emits
	 * errors are recorded. close() calls the trigger's closeFunction.
	 */
	async activate(nodes: INode[], connections: IConnections, triggerName: string): Promise<ActiveTrigger> {
		const id = `wf-engine-${++this.execCounter}`;
		const workflow = new wf.Workflow({ id, name: id, nodes, connections, active: true, nodeTypes: this.nodeTypes(), staticData: {}, settings: { executionOrder: 'v1' } });
		const trigger = workflow.getNode(triggerName);
		if (!trigger) throw new Error(`no node ${triggerName}`);
		const active: ActiveTrigger = { emits: [], runs: [], errors: [], close: async () => undefined };
		const emit: ITriggerFunctions['emit'] = (data, _response, done) => {
			active.emits.push({ at: Date.now(), items: data[0] ?? [] });
			const executionId = `exec-${process.pid}-${++this.execCounter}`;
			const runData = wf.createRunExecutionData({ executionData: { nodeExecutionStack: [{ node: trigger, data: { main: data }, source: null }] } });
			const we = new core.WorkflowExecute(this.additionalData(executionId, { id, name: id, nodes, connections }, 'trigger'), 'trigger', runData);
			void Promise.resolve(we.processRunExecutionData(workflow)).then(
				(run) => {
					active.runs.push(run);
					done?.resolve(run);
				},
				(e: Error) => {
					active.errors.push(e.message);
					done?.reject(e);
				},
			);
		};
		const emitError: ITriggerFunctions['emitError'] = (e) => {
			active.errors.push(e.message);
		};
		const additionalData = this.additionalData(`activation-${process.pid}-${this.execCounter}`, { id, name: id, nodes, connections }, 'trigger');
		const response = await new core.TriggersAndPollers().runTriggerFunction(
			workflow,
			trigger,
			() => new core.TriggerContext(workflow, trigger, additionalData, 'trigger', 'activate', emit, emitError),
			additionalData,
			'trigger',
			'activate',
		);
		active.close = async () => {
			await response?.closeFunction?.();
		};
		return active;
	}

	async runPartial(nodes: INode[], connections: IConnections, earlier: IRun, destination: string, dirty: string[]): Promise<{ run: IRun; received: Received }> {
		for (const k of Object.keys(this.received)) delete this.received[k];
		const id = `wf-engine-${++this.execCounter}`;
		const workflow = new wf.Workflow({ id, name: id, nodes, connections, active: false, nodeTypes: this.nodeTypes(), staticData: {}, settings: { executionOrder: 'v1' } });
		const additionalData = this.additionalData(`exec-${process.pid}-${this.execCounter}`, { id, name: id, nodes, connections }, 'manual');
		const we = new core.WorkflowExecute(additionalData, 'manual');
		const run = await we.runPartialWorkflow2(workflow, earlier.data.resultData.runData, {}, dirty, { nodeName: destination, mode: 'inclusive' });
		return { run, received: { ...this.received } };
	}

	/**
	 * n8n's "Retry (from node with error)" of a failed run, as n8n 2.33's executions service and
	 * workflow runner do it: a NEW execution (new id, mode 'retry') resumes the failed run's data,
	 * the failed node's errored run removed, so the failed node runs again fed by the stored output
	 * of every node before it; those nodes do not run again.
	 */
	async retry(nodes: INode[], connections: IConnections, failed: IRun): Promise<{ run: IRun; received: Received; executionId: string }> {
		for (const k of Object.keys(this.received)) delete this.received[k];
		const data = JSON.parse(JSON.stringify(failed.data)) as IRun['data'];
		const last = data.resultData.lastNodeExecuted;
		delete data.resultData.error;
		if (last) {
			const runs = data.resultData.runData[last];
			if (runs?.length && runs[runs.length - 1].error !== undefined) runs.pop();
		}
		const id = `wf-engine-${++this.execCounter}`;
		const workflow = new wf.Workflow({ id, name: id, nodes, connections, active: false, nodeTypes: this.nodeTypes(), staticData: {}, settings: { executionOrder: 'v1' } });
		const executionId = `exec-${process.pid}-${this.execCounter}`;
		const additionalData = this.additionalData(executionId, { id, name: id, nodes, connections }, 'retry');
		const we = new core.WorkflowExecute(additionalData, 'retry', data as never);
		const run = await we.processRunExecutionData(workflow);
		return { run, received: { ...this.received }, executionId };
	}

	/**
	 * Runs a workflow from its node named `start` to the end. Returns n8n's IRun and the sinks'
	 * records for this run only (`received` is reset first).
	 */
	async run(
		nodes: INode[],
		connections: IConnections,
		opts: { start?: string; mode?: WorkflowExecuteMode; pinData?: Record<string, INodeExecutionData[]> } = {},
	): Promise<{ run: IRun; received: Received }> {
		for (const k of Object.keys(this.received)) delete this.received[k];
		const mode = opts.mode ?? 'trigger';
		const id = `wf-engine-${++this.execCounter}`;
		const workflow = new wf.Workflow({ id, name: id, nodes, connections, active: false, nodeTypes: this.nodeTypes(), staticData: {}, settings: { executionOrder: 'v1' } });
		const executionId = `exec-${process.pid}-${this.execCounter}`;
		const additionalData = this.additionalData(executionId, { id, name: id, nodes, connections }, mode);
		const we = new core.WorkflowExecute(additionalData, mode);
		const run = await we.run({ workflow, startNode: workflow.getNode(opts.start ?? 'Source') ?? undefined, pinData: opts.pinData as never });
		return { run, received: { ...this.received } };
	}
}

/** An activated trigger: what it emitted (time and items), the runs those started, errors. */
export interface ActiveTrigger {
	emits: Array<{ at: number; items: INodeExecutionData[] }>;
	runs: IRun[];
	errors: string[];
	close(): Promise<void>;
}

/**
 * The editor's "Execute step" on `destination` after an earlier run: n8n's partial execution, which
 * reuses the earlier run data of every node that is not dirty and runs the rest.
 */
export async function runPartial(
	e: Engine,
	nodes: INode[],
	connections: IConnections,
	earlier: IRun,
	destination: string,
	dirty: string[] = [],
): Promise<{ run: IRun; received: Received }> {
	return e.runPartial(nodes, connections, earlier, destination, dirty);
}

/** Node builders. */
let nodeCounter = 0;
export function node(name: string, type: string, parameters: INode['parameters'], extra: Partial<INode> = {}): INode {
	return { id: `n${++nodeCounter}`, name, type, typeVersion: 1, position: [0, 0], parameters, ...extra };
}

export function source(items: object[]): INode {
	return node('Source', 'test.source', { items: JSON.stringify(items) });
}

export function sink(name: string): INode {
	return node(name, 'test.sink', {});
}

/** connections[from] = one list of targets per output index. */
export function connect(map: Record<string, string[][]>): IConnections {
	const out: IConnections = {};
	for (const [from, outputs] of Object.entries(map)) {
		out[from] = { main: outputs.map((targets) => targets.map((t) => ({ node: t, type: 'main' as never, index: 0 }))) };
	}
	return out;
}

/** The error message of a run that failed, or undefined. */
export function runError(run: IRun): string | undefined {
	return run.data.resultData.error?.message;
}
