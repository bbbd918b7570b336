/**
 * Drives the four nodes through their execute path (test/helpers/fakeExecute.ts) with a given
 * credential, for the hardening tests. Each helper returns the node's outputs.
 */
import type { INodeExecutionData } from 'n8n-workflow';
import { ReserveOperation } from '../../../nodes/ReserveOperation/ReserveOperation.node';
import { ConfirmOperation } from '../../../nodes/ConfirmOperation/ConfirmOperation.node';
import { ReconcileUnknown } from '../../../nodes/ReconcileUnknown/ReconcileUnknown.node';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { fakeExecute } from '../../helpers/fakeExecute';

export type Creds = Record<string, unknown>;
type Param = unknown | ((i: number) => unknown);

export interface RunOpts {
	continueOnFail?: boolean;
	executionId?: string;
	workflowId?: string;
	onError?: 'stopWorkflow' | 'continueRegularOutput' | 'continueErrorOutput';
}

/**
 * Options every helper applies unless the call overrides them. Every node's output 0 is Unrecorded
 * (nodes/shared/outputs.ts); the results follow it.
 */
export const runDefaults: RunOpts = {};

const items = (n: number): INodeExecutionData[] => Array.from({ length: n }, (_, i) => ({ json: { n: i } }));

/** Reserve Operation with custom keys; `keys[i]` for item i. */
export function reserve(
	creds: Creds,
	keys: unknown[],
	extra: Record<string, Param> = {},
	o: RunOpts = {},
): Promise<INodeExecutionData[][]> {
	const fns = fakeExecute({
		items: items(keys.length),
		params: {
			keyMode: 'custom',
			operationKey: (i: number) => keys[i],
			target: 'payments-api',
			// The request is the Request parameter, not the input item (Reserve's default: From the Input Item).
			requestSource: 'custom',
			request: (i: number) => ({ key: keys[i], amount: 100 + i }),
			leaseSeconds: 300,
			...extra,
		},
		credentials: creds,
		nodeName: 'Reserve Operation',
		...runDefaults,
		...o,
	});
	return new ReserveOperation().execute.call(fns);
}

/** Confirm Operation with explicit lineage and outcome. */
export function confirm(
	creds: Creds,
	rows: Array<{ key: unknown; token: unknown; outcome?: unknown; ref?: unknown; reason?: unknown }>,
	extra: Record<string, Param> = {},
	o: RunOpts = {},
): Promise<INodeExecutionData[][]> {
	const fns = fakeExecute({
		items: items(rows.length),
		params: {
			lineage: 'explicit',
			operationKey: (i: number) => rows[i].key,
			leaseToken: (i: number) => rows[i].token,
			outcomeSource: 'explicit',
			outcome: (i: number) => rows[i].outcome ?? 'succeeded',
			retryable: true,
			reason: (i: number) => rows[i].reason ?? '',
			externalReference: (i: number) => rows[i].ref ?? `ref-${i}`,
			options: {},
			...extra,
		},
		credentials: creds,
		nodeName: 'Confirm Operation',
		...runDefaults,
		...o,
	});
	return new ConfirmOperation().execute.call(fns);
}

/** Reconcile Unknown, Claim. */
export function claim(creds: Creds, p: Record<string, Param> = {}, o: RunOpts = {}): Promise<INodeExecutionData[][]> {
	const fns = fakeExecute({
		items: [{ json: {} }],
		params: { operation: 'claim', batchSize: 100, settleSeconds: 0, claimSeconds: 300, target: '', ...p },
		credentials: creds,
		nodeName: 'Reconcile Unknown',
		...runDefaults,
		...o,
	});
	return new ReconcileUnknown().execute.call(fns);
}

/** Reconcile Unknown, Resolve with explicit lineage and resolution. */
export function resolve(
	creds: Creds,
	rows: Array<{ key: unknown; claimToken: unknown; resolution?: unknown; ref?: unknown }>,
	extra: Record<string, Param> = {},
	o: RunOpts = {},
): Promise<INodeExecutionData[][]> {
	const fns = fakeExecute({
		items: items(rows.length),
		params: {
			operation: 'resolve',
			lineage: 'explicit',
			operationKey: (i: number) => rows[i].key,
			claimToken: (i: number) => rows[i].claimToken,
			lookupSource: 'explicit',
			resolution: (i: number) => rows[i].resolution ?? 'happened',
			externalReference: (i: number) => rows[i].ref ?? `found-${i}`,
			reason: '',
			maxChecks: 5,
			backoffBaseSeconds: 60,
			backoffMaxSeconds: 3600,
			...extra,
		},
		credentials: creds,
		nodeName: 'Reconcile Resolve',
		...runDefaults,
		...o,
	});
	return new ReconcileUnknown().execute.call(fns);
}

/** Priority Dequeue, any operation; `p` holds its parameters. */
export function queueOp(creds: Creds, n: number, p: Record<string, Param>, o: RunOpts & { input?: INodeExecutionData[] } = {}) {
	const fns = fakeExecute({
		items: o.input ?? items(n),
		params: { resource: 'task', options: {}, dedupeKey: '', ...p },
		credentials: creds,
		nodeName: 'Priority Dequeue',
		...runDefaults,
		...o,
	});
	return new PriorityDequeue().execute.call(fns);
}

/** Enqueue `payloads.length` tasks through the node. */
export function enqueue(creds: Creds, queue: string, payloads: unknown[], p: Record<string, Param> = {}, o: RunOpts = {}) {
	return queueOp(creds, payloads.length, { operation: 'enqueue', queue, priorityGroup: 'normal', payload: (i: number) => payloads[i], ...p }, o);
}

/** The Priority Groups parameter's default (high 5, normal 2, low 1), as n8n fills it in. */
export const DEFAULT_PRIORITY_GROUPS = { group: [{ name: 'high', weight: 5 }, { name: 'normal', weight: 2 }, { name: 'low', weight: 1 }] };

export function dequeue(creds: Creds, queue: string, batchSize: number, p: Record<string, Param> = {}, o: RunOpts = {}) {
	return queueOp(creds, 1, { operation: 'dequeue', queue, batchSize, leaseSeconds: 300, priorityGroups: DEFAULT_PRIORITY_GROUPS, ...p }, o);
}

export function complete(creds: Creds, tasks: Array<{ taskId: unknown; leaseToken: unknown }>, o: RunOpts = {}) {
	return queueOp(
		creds,
		tasks.length,
		{ operation: 'complete', taskSource: 'explicit', taskId: (i: number) => tasks[i].taskId, leaseToken: (i: number) => tasks[i].leaseToken },
		o,
	);
}

/** Settles a promise into {ok, value | error} without throwing. */
export async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: Error & { description?: string } }> {
	try {
		return { ok: true, value: await p };
	} catch (e) {
		return { ok: false, error: e as Error & { description?: string } };
	}
}
