/**
 * Runs the Priority Dequeue Trigger node's own trigger() (the built-in-process class, not the
 * watcher alone) against real Postgres with a minimal ITriggerFunctions stand-in: credentials and
 * parameters from plain objects (a parameter not given has its default from the node's
 * description, as n8n fills it in for a saved node), emit() hands the items to a test "consumer" and resolves the
 * done promise with an IRun-shaped result ({status, finished}: finished true for 'success', as
 * n8n's engine sets it), as n8n does when the execution ends; a consumer may instead return
 * `{ run }`, the exact run (or undefined: no run object) the done promise resolves with, or
 * `{ reject }`, an error the done promise rejects with (n8n lost track of the execution). Unit-of-integration only: the real-engine runs are in test/e2e.
 */
import type { IDataObject, INodeExecutionData, IRun, ITriggerFunctions, ITriggerResponse } from 'n8n-workflow';
import { PriorityDequeueTrigger } from '../../nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node';
import { QUEUE_DATABASE_URL } from './db';

export type Consumer = (items: INodeExecutionData[]) => Promise<'success' | 'error' | { run: IRun | undefined } | { reject: Error }>;

/** The trigger's credential for the test database and `schema` (connection string, 5 connections). */
export function triggerCredentials(schema: string): IDataObject {
	return { connectionType: 'connectionString', connectionString: QUEUE_DATABASE_URL, schema, autoApplySchema: true, maxConnections: 5 };
}

export interface ActiveTrigger {
	response: ITriggerResponse;
	/** Start times (ms since epoch) of every execution the trigger started. */
	executions: number[];
	/** Items emitted, per execution. */
	emitted: INodeExecutionData[][];
	warnings: string[];
	/** Messages logged at info level (e.g. the recovery after an outage). */
	infos: string[];
	debugs: string[];
	close(): Promise<void>;
}

export async function activateTrigger(opts: {
	credentials: IDataObject;
	parameters: IDataObject;
	consumer: Consumer;
	mode?: 'trigger' | 'manual';
}): Promise<ActiveTrigger> {
	const executions: number[] = [];
	const emitted: INodeExecutionData[][] = [];
	const warnings: string[] = [];
	const infos: string[] = [];
	const debugs: string[] = [];
	const log = (m: string) => warnings.push(m);
	const node = new PriorityDequeueTrigger();
	const defaults: Record<string, unknown> = Object.fromEntries(node.description.properties.map((p) => [p.name, p.default]));
	const fns = {
		getCredentials: async () => opts.credentials,
		getNodeParameter: (name: string, fallback?: unknown) => (name in opts.parameters ? opts.parameters[name] : name in defaults ? defaults[name] : fallback),
		getNode: () => ({ name: 'Priority Dequeue Trigger', typeVersion: 1, type: 'priorityDequeueTrigger', parameters: opts.parameters }),
		getMode: () => opts.mode ?? 'trigger',
		logger: { debug: (m: string) => debugs.push(m), info: (m: string) => infos.push(m), warn: log, error: log },
		helpers: {
			createDeferredPromise: <T>() => {
				let resolve!: (v: T) => void;
				let reject!: (e: Error) => void;
				const promise = new Promise<T>((res, rej) => {
					resolve = res;
					reject = rej;
				});
				return { promise, resolve, reject };
			},
		},
		emit: (data: INodeExecutionData[][], _response?: unknown, done?: { resolve: (r: IRun) => void; reject: (e: Error) => void }) => {
			executions.push(Date.now());
			emitted.push(data[0]);
			void opts
				.consumer(data[0])
				.catch(() => 'error' as const)
				.then((r) => {
					if (typeof r === 'object' && 'reject' in r) done?.reject(r.reject);
					else done?.resolve(typeof r === 'object' ? (r.run as IRun) : ({ status: r, finished: r === 'success', data: { resultData: { runData: {} } } } as unknown as IRun));
				});
		},
	} as unknown as ITriggerFunctions;
	const response = await node.trigger.call(fns);
	return {
		response,
		executions,
		emitted,
		warnings,
		infos,
		debugs,
		close: async () => {
			await response.closeFunction?.();
		},
	};
}

/** Executions started within [from, from + ms). */
export function countIn(executions: number[], from: number, ms: number): number {
	return executions.filter((t) => t >= from && t < from + ms).length;
}
