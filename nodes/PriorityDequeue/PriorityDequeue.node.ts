import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { CREDENTIAL_NAME, ledgerConnectionTest } from '../shared/connection';
import { failClosedOutputs } from '../shared/outputs';
import { QUEUE_RESULT_LABEL } from '../../src/queue/states';
import { operationParameter, operationProperties } from '../shared/router';
import { operations, operationsOf, router } from './router';

/** A weighted-fair Postgres task queue: enqueue, dequeue with a lease, settle fenced by the lease token. */
export class PriorityDequeue implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Priority Dequeue',
		name: 'priorityDequeue',
		icon: { light: 'file:dequeue.svg', dark: 'file:dequeue.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] + ($parameter["queue"] ? ": " + $parameter["queue"] : "") }}',
		description: 'Weighted-fair Postgres task queue with priority groups, leases, retries with backoff and a dead letter',
		defaults: { name: 'Priority Dequeue' },
		inputs: [NodeConnectionTypes.Main],
		// [Unrecorded, result] for every operation (nodes/shared/outputs.ts).
		outputs: failClosedOutputs([QUEUE_RESULT_LABEL]),
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
			operationParameter(operationsOf('task'), 'dequeue', { displayOptions: { show: { resource: ['task'] } } }),
			operationParameter(operationsOf('queue'), 'stats', { displayOptions: { show: { resource: ['queue'] } } }),
			...operationProperties(operations),
		],
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
