/**
 * Pieces shared by the Priority Dequeue operations: the shared parameters, how a settle operation
 * finds its task (task id and lease token), and how results become items. Priority Groups are
 * parsed by src/queue/groups.ts (groupsFromRows).
 */
import type { NodeOperation } from '../shared/router';
import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData, type INodeProperties } from 'n8n-workflow';

/** One operation (nodes/shared/router.ts) and the resource whose Operation list shows it. */
export interface QueueOperation extends NodeOperation {
	resource: 'task' | 'queue';
}

/** The Queue parameter (a new object per call: each operation lists its own; the router shows it for that one). */
export function queueField(): INodeProperties {
	return {
		displayName: 'Queue',
		name: 'queue',
		type: 'string',
		default: 'default',
		required: true,
		description: 'Name of the queue (1 to 200 bytes). Producers and consumers of one queue use the same name.',
	};
}

/** Task ID and Lease Token of a settle operation. */
export function taskFields(): INodeProperties[] {
	return [
		{
			displayName: 'Task Source',
			name: 'taskSource',
			type: 'options',
			options: [
				{
					name: 'From Priority Dequeue Upstream',
					value: 'lineage',
					description:
						'Use taskId and leaseToken of the item itself, or else of the item it descends from at the nearest Priority Dequeue node (or trigger) upstream',
				},
				{ name: 'Explicit', value: 'explicit', description: 'Give the task ID and lease token as expressions' },
			],
			default: 'lineage',
		},
		{
			displayName: 'Task ID',
			name: 'taskId',
			type: 'string',
			default: '={{ $json.taskId }}',
			required: true,
			displayOptions: { show: { taskSource: ['explicit'] } },
		},
		{
			displayName: 'Lease Token',
			name: 'leaseToken',
			type: 'string',
			default: '={{ $json.leaseToken }}',
			typeOptions: { password: true },
			required: true,
			description: 'The lease token the dequeue returned: the fence that makes a late call from a lost lease change nothing',
			displayOptions: { show: { taskSource: ['explicit'] } },
		},
	];
}

const DEQUEUE_TYPES = ['.priorityDequeue', '.priorityDequeueTrigger'];

/** Task id and lease token for item i (validated by the core later). Throws NodeOperationError. */
export function taskOf(fns: IExecuteFunctions, i: number, item: INodeExecutionData): { taskId: string; leaseToken: string } {
	const source = fns.getNodeParameter('taskSource', i, 'lineage') as string;
	if (source === 'explicit') {
		return {
			taskId: String(fns.getNodeParameter('taskId', i) ?? ''),
			leaseToken: String(fns.getNodeParameter('leaseToken', i) ?? ''),
		};
	}
	const own = item.json;
	if (own && own.taskId !== undefined && typeof own.leaseToken === 'string') {
		return { taskId: String(own.taskId), leaseToken: own.leaseToken };
	}
	// n8n lists parents deepest ancestor first: the nearest Priority Dequeue node (or trigger) is
	// the last one. Wake-up mode puts a trigger (whose item holds no task) before Dequeue, so the
	// nearest node whose item holds a task wins.
	const candidates = fns
		.getParentNodes(fns.getNode().name)
		.filter((p) => !p.disabled && DEQUEUE_TYPES.some((t) => p.type.endsWith(t)))
		.map((p) => p.name)
		.reverse();
	if (candidates.length === 0) {
		throw new NodeOperationError(
			fns.getNode(),
			'The item has no taskId and leaseToken, and no Priority Dequeue node is upstream. Set "Task Source" to "Explicit".',
			{ itemIndex: i },
		);
	}
	let firstProblem: NodeOperationError | undefined;
	for (const name of candidates) {
		let json: IDataObject | undefined;
		try {
			json = fns.getWorkflowDataProxy(i).$(name).item?.json as IDataObject | undefined;
		} catch (e) {
			firstProblem ??= new NodeOperationError(
				fns.getNode(),
				`Could not trace item ${i} back to its "${name}" item (${(e as Error).message}). Set "Task Source" to "Explicit".`,
				{ itemIndex: i },
			);
			continue;
		}
		if (json && json.taskId !== undefined && typeof json.leaseToken === 'string') {
			return { taskId: String(json.taskId), leaseToken: json.leaseToken };
		}
		firstProblem ??= new NodeOperationError(fns.getNode(), `The "${name}" item this item descends from holds no taskId and leaseToken`, {
			itemIndex: i,
		});
	}
	throw firstProblem;
}

/** A plain result object as an item's json, without the given keys. */
export function asJson(value: object, omit: string[] = []): IDataObject {
	const json = JSON.parse(JSON.stringify(value)) as IDataObject;
	for (const k of omit) delete json[k];
	return json;
}
