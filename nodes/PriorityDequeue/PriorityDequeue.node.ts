import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { CREDENTIAL_NAME, ledgerConnectionTest } from '../shared/connection';
import { versionedOutputs } from '../shared/outputs';
import { QUEUE_RESULT_LABEL } from '../../src/queue/states';
import { operations, router } from './router';

/** A weighted-fair Postgres task queue: enqueue, dequeue with a lease, settle fenced by the lease token. */
export class PriorityDequeue implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Priority Dequeue',
		name: 'priorityDequeue',
		icon: { light: 'file:../shared/ledger.svg', dark: 'file:../shared/ledger.dark.svg' },
		group: ['transform'],
		version: [1, 2],
		defaultVersion: 2,
		subtitle: '={{ $parameter["operation"] + ($parameter["queue"] ? ": " + $parameter["queue"] : "") }}',
		description: 'Weighted-fair Postgres task queue with priority groups, leases, retries with backoff and a dead letter',
		defaults: { name: 'Priority Dequeue' },
		inputs: [NodeConnectionTypes.Main],
		// Version 2: [Not Recorded, result] for every operation (see nodes/shared/outputs.ts).
		outputs: versionedOutputs([QUEUE_RESULT_LABEL], [QUEUE_RESULT_LABEL]),
		credentials: [{ name: CREDENTIAL_NAME, required: true, testedBy: 'ledgerConnectionTest' }],
		properties: [
			{
				displayName: 'Resource',
				name: 'resource',
				type: 'options',
				noDataExpression: true,
				options: [
					{ name: 'Task', value: 'task', description: 'Add, claim and settle tasks' },
					{ name: 'Queue', value: 'queue', description: 'Watch and maintain a whole queue' },
				],
				default: 'task',
			},
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				displayOptions: { show: { resource: ['task'] } },
				options: [
					{ name: 'Complete', value: 'complete', action: 'Complete a task', description: 'Mark a claimed task succeeded (needs its live lease)' },
					{ name: 'Dequeue', value: 'dequeue', action: 'Claim tasks', description: 'Claim up to N ready tasks, weighted fair across priority groups, each with a lease' },
					{ name: 'Enqueue', value: 'enqueue', action: 'Add tasks to a queue', description: 'Add one task per input item, all in one transaction' },
					{ name: 'Extend Lease', value: 'extendLease', action: 'Extend a task lease', description: 'Heartbeat: keep holding a claimed task longer' },
					{ name: 'Fail', value: 'fail', action: 'Fail a task', description: 'Retry a claimed task after a backoff, or send it to the dead letter at its max attempts' },
					{ name: 'Release', value: 'release', action: 'Release a task', description: 'Give a claimed task back without failing it' },
					{ name: 'Requeue Dead', value: 'requeueDead', action: 'Requeue dead tasks', description: 'Put dead-lettered tasks back to pending' },
				],
				default: 'dequeue',
			},
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				displayOptions: { show: { resource: ['queue'] } },
				options: [
					{ name: 'Purge Finished', value: 'purge', action: 'Purge finished tasks', description: 'Retention: archive old dead tasks and delete old archived tasks' },
					{ name: 'Stats', value: 'stats', action: 'Get queue stats', description: 'Depth per group, oldest wait, in flight and dead' },
				],
				default: 'stats',
			},
			...Object.values(operations).flatMap((op) => op.description),
		],
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
