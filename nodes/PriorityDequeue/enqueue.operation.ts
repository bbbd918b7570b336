/** Priority Dequeue, operation "enqueue": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, queueField, type QueueOperation } from './common';
import { enqueue, type NotifyMode, type OnDuplicateMode, prepareEnqueueInput } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { jsonParameter } from '../shared/context';
import { batchFailure, prepareItems } from '../shared/items';
import { LIMITS, numberRange } from '../shared/limits';

const description: INodeProperties[] = [
	queueField(),
	{
		displayName: 'Priority Group',
		name: 'priorityGroup',
		type: 'string',
		default: 'normal',
		required: true,
		description: 'Group of the task: high, normal or low by default; any name the consumers list under Priority Groups',
	},
	{
		displayName: 'Payload',
		name: 'payload',
		type: 'json',
		default: '={{ $json }}',
		description: 'JSON the consumer receives as payload',
	},
	{
		displayName: 'Dedupe Key',
		name: 'dedupeKey',
		type: 'string',
		default: '',
		description:
			'Optional. While a task with this key is pending or processing in the queue, enqueueing again returns that task (marked deduplicated, outcome duplicate) instead of a new one; the options On Duplicate Key, Throttle and Debounce change that.',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Debounce (Seconds)',
				name: 'debounceSeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.enqueueDebounceSeconds),
				default: LIMITS.enqueueDebounceSeconds.default,
				description:
					'Needs a Dedupe Key. The task runs this many seconds after the last enqueue of its key: an enqueue while it is pending replaces its payload and moves it to now + this; if it is already being worked on, a new task is enqueued. Not with Throttle or a replacing On Duplicate Key.',
			},
			{
				displayName: 'Delay (Seconds)',
				name: 'delaySeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.enqueueDelaySeconds),
				default: LIMITS.enqueueDelaySeconds.default,
				description: 'Seconds from now before the task may be claimed',
			},
			{
				displayName: 'Max Attempts',
				name: 'maxAttempts',
				type: 'number',
				typeOptions: numberRange(LIMITS.maxAttempts),
				default: LIMITS.maxAttempts.default,
				description: 'Claims allowed before the task goes to the dead letter (an expired lease counts as an attempt)',
			},
			{
				displayName: 'Not Before',
				name: 'notBefore',
				type: 'dateTime',
				default: '',
				description: 'The task may not be claimed before this time. With a delay too, the later time wins.',
			},
			{
				displayName: 'Notify Consumers',
				name: 'notify',
				type: 'options',
				options: [
					{
						name: 'After Commit',
						value: 'after',
						description:
							'Commit first, then notify in a second statement: many concurrent single-task producers no longer commit one at a time (one more round trip)',
					},
					{
						name: 'None (Consumers Poll)',
						value: 'none',
						description: 'No notification: triggers pick the task up at their next poll',
					},
					{
						name: 'On Commit',
						value: 'commit',
						description: 'Notify inside the transaction, delivered at its commit (each notifying commit takes a database-wide lock through its WAL flush)',
					},
				],
				default: 'commit',
				description: 'How listening Priority Dequeue Triggers are woken. Taken from the first item. See docs/queue.md, "Notifications".',
			},
			{
				displayName: 'On Duplicate Key',
				name: 'onDuplicate',
				type: 'options',
				options: [
					{ name: 'Keep First', value: 'keep', description: 'The live task of the key is returned unchanged (outcome duplicate)' },
					{
						name: 'Replace Payload',
						value: 'payload',
						description: 'A pending task of the key takes this payload and keeps its run time (outcome replaced); one being worked on is left alone (kept_processing)',
					},
					{
						name: 'Replace Payload and Run At',
						value: 'payload_run_at',
						description: 'A pending task of the key takes this payload and this run time (now, Delay or Not Before); one being worked on is left alone (kept_processing)',
					},
				],
				default: 'keep',
				description: 'Needs a Dedupe Key: what an enqueue does when the key already has a pending or processing task. See docs/queue.md, "Replace by dedupe key".',
			},
			{
				displayName: 'Serial Key',
				name: 'serialKey',
				type: 'string',
				default: '',
				placeholder: 'e.g. customer-42',
				description:
					'Tasks of this queue with the same serial key (a customer, an account) run one at a time, in enqueue order; other keys run in parallel. A task whose key has one ahead of it waits, unclaimable, until that one completes, is cancelled or is removed (a dead one holds the key until it is requeued, completed by ID or purged). Up to 512 bytes. See docs/queue.md, "One at a time per key".',
			},
			{
				displayName: 'Throttle (Seconds)',
				name: 'throttleSeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.enqueueThrottleSeconds),
				default: LIMITS.enqueueThrottleSeconds.default,
				description:
					'Needs a Dedupe Key. At most one task per key in this many seconds from the enqueue that wrote it: an enqueue inside the window answers throttled and writes nothing, even when that task has finished.',
			},
		],
	},
];

/** All input items in one transaction (one round trip); one output item per input item. */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const out: INodeExecutionData[] = [];
	const { prepared, errorItems } = prepareItems(this, items, (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		return prepareEnqueueInput({
			queue: this.getNodeParameter('queue', i) as string,
			group: this.getNodeParameter('priorityGroup', i) as string,
			payload: jsonParameter(this, this.getNodeParameter('payload', i, {}), 'The payload', i) ?? {},
			dedupeKey: (this.getNodeParameter('dedupeKey', i, '') as string) || null,
			delaySeconds: options.delaySeconds === undefined ? undefined : Number(options.delaySeconds),
			notBefore: (options.notBefore as string) || null,
			maxAttempts: options.maxAttempts === undefined ? undefined : Number(options.maxAttempts),
			onDuplicate: (options.onDuplicate as OnDuplicateMode | undefined) ?? undefined,
			throttleSeconds: options.throttleSeconds === undefined ? undefined : Number(options.throttleSeconds),
			debounceSeconds: options.debounceSeconds === undefined ? undefined : Number(options.debounceSeconds),
			serialKey: (options.serialKey as string | undefined) || null,
		});
	});
	out.push(...errorItems);
	if (prepared.length === 0) return [out];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		const first = this.getNodeParameter('options', prepared[0].index, {}) as IDataObject;
		const notify = ((first.notify as string) || 'commit') as NotifyMode;
		const results = await enqueue(pool, schema, prepared.map((p) => p.value), { notify }, bounds);
		results.forEach((r, k) => out.push({ json: asJson(r, ['index', 'payload']), pairedItem: { item: prepared[k].index } }));
	} catch (e) {
		out.push(...batchFailure(this, e, 'Enqueue', prepared.map((p) => p.index)));
	}
	return [out];
}

export const enqueueOperation: QueueOperation = {
	resource: 'task',
	option: { name: 'Enqueue', action: 'Add tasks to a queue', description: 'Add one task per input item, all in one transaction' },
	description,
	execute,
};
