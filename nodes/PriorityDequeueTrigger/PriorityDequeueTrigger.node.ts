import {
	NodeConnectionTypes,
	type IDataObject,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IRun,
	type ITriggerFunctions,
	type ITriggerResponse,
} from 'n8n-workflow';
import { ensureSchema } from '../../src/db/migrate';
import { getPool } from '../../src/db/pool';
import { checkGroups, checkInt, checkQueueName, checkSeconds, dequeue, nextDue, queueChannel } from '../../src/queue';
import { CREDENTIAL_NAME, ledgerConnectionTest, toConnectionConfig } from '../shared/connection';
import { connectListener } from './listen';
import { QueueWatcher, type WakeReason } from './watcher';
import { parseGroupWeights } from '../PriorityDequeue/actions/common';

/** Starts consumer executions when a Priority Dequeue queue has work: LISTEN/NOTIFY as a hint, polling as the truth. */
export class PriorityDequeueTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Priority Dequeue Trigger',
		name: 'priorityDequeueTrigger',
		icon: { light: 'file:../shared/ledger.svg', dark: 'file:../shared/ledger.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{ ($parameter["mode"] === "claim" ? "claim: " : "wake up: ") + $parameter["queue"] }}',
		description: 'Starts a consumer execution as soon as a Priority Dequeue queue has ready work',
		defaults: { name: 'Priority Dequeue Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: CREDENTIAL_NAME, required: true, testedBy: 'ledgerConnectionTest' }],
		properties: [
			{
				displayName: 'Queue',
				name: 'queue',
				type: 'string',
				default: 'default',
				required: true,
				description: 'Name of the queue to watch',
			},
			{
				displayName: 'Mode',
				name: 'mode',
				type: 'options',
				options: [
					{
						name: 'Wake Up',
						value: 'wakeUp',
						description: 'Emit one item saying work is ready; a Priority Dequeue node (Dequeue) after it claims the tasks',
					},
					{
						name: 'Claim Tasks',
						value: 'claim',
						description: 'Claim the tasks here (same weighted-fair claim as Dequeue) and emit one item per task',
					},
				],
				default: 'wakeUp',
			},
			{
				displayName: 'Batch Size',
				name: 'batchSize',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 10000 },
				default: 10,
				description: 'Maximum number of tasks to claim per execution',
				displayOptions: { show: { mode: ['claim'] } },
			},
			{
				displayName: 'Lease (Seconds)',
				name: 'leaseSeconds',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 86400 },
				default: 300,
				description: 'Visibility timeout of each claimed task',
				displayOptions: { show: { mode: ['claim'] } },
			},
			{
				displayName: 'Use LISTEN/NOTIFY',
				name: 'useListen',
				type: 'boolean',
				default: true,
				description:
					'Whether to keep one connection open with LISTEN so new work is picked up at once. Switch off behind PgBouncer in transaction pooling mode (LISTEN does not work there): polling alone then finds the work.',
			},
			{
				displayName: 'Poll Interval (Seconds)',
				name: 'pollSeconds',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 30,
				description:
					'How often to check the queue even without a notification (and how late work is noticed when LISTEN/NOTIFY is off). Delayed tasks are picked up at their time.',
			},
			{
				displayName: 'Max Parallel Executions',
				name: 'maxInFlight',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 100 },
				default: 1,
				description: 'Executions this trigger may have running at once; more work waits until one finishes',
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
					{
						displayName: 'Aging Interval (Seconds)',
						name: 'agingSeconds',
						type: 'number',
						typeOptions: { minValue: 0 },
						default: 300,
						description: 'Claim mode: a waiting group competes one position higher per interval. 0 switches aging off.',
					},
					{
						displayName: 'Execution Timeout (Seconds)',
						name: 'inFlightTimeoutSeconds',
						type: 'number',
						typeOptions: { minValue: 1 },
						default: 600,
						description: 'After this long, a started execution no longer counts against Max Parallel Executions',
					},
					{
						displayName: 'Groups and Weights',
						name: 'groupWeights',
						type: 'string',
						default: 'high:5, normal:2, low:1',
						description: 'Claim mode: priority groups, highest first, with their weighted-fair share',
					},
				],
			},
		],
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const config = toConnectionConfig(await this.getCredentials(CREDENTIAL_NAME));
		const queue = checkQueueName(this.getNodeParameter('queue') as string);
		const mode = this.getNodeParameter('mode', 'wakeUp') as string;
		const options = this.getNodeParameter('options', {}) as IDataObject;
		const pollMs = checkSeconds(this.getNodeParameter('pollSeconds', 30), 'Poll interval', 1, 86_400) * 1000;
		const maxInFlight = checkInt(this.getNodeParameter('maxInFlight', 1), 'Max parallel executions', 1, 100);
		const inFlightTimeoutMs = checkSeconds(options.inFlightTimeoutSeconds ?? 600, 'Execution timeout', 1, 86_400) * 1000;
		const claim =
			mode === 'claim'
				? {
						queue,
						limit: checkInt(this.getNodeParameter('batchSize', 10), 'Batch size', 1, 10_000),
						leaseSeconds: checkSeconds(this.getNodeParameter('leaseSeconds', 300), 'Lease', 1, 86_400),
						agingSeconds: checkSeconds(options.agingSeconds ?? 300, 'Aging interval', 0, 31_536_000),
						groups: checkGroups(parseGroupWeights(options.groupWeights)),
					}
				: undefined;
		const pool = getPool(config);
		await ensureSchema(pool, config.schema, config.autoApplySchema !== false);

		const manual = this.getMode() === 'manual';
		const emitAndWait = (items: INodeExecutionData[]): { finished: Promise<unknown> } => {
			const done = this.helpers.createDeferredPromise<IRun>();
			this.emit([items], undefined, done);
			return { finished: done.promise };
		};
		const fire = async (reason: WakeReason): Promise<{ finished: Promise<unknown> } | undefined> => {
			if (claim) {
				const tasks = await dequeue(pool, config.schema, claim);
				if (tasks.length === 0) return undefined;
				return emitAndWait(tasks.map((t) => ({ json: JSON.parse(JSON.stringify(t)) as IDataObject })));
			}
			return emitAndWait([{ json: { queue, reason, wokeAt: new Date().toISOString() } }]);
		};
		const watcher = new QueueWatcher({
			channel: queueChannel(config.schema, queue),
			pollMs,
			maxInFlight: manual ? 1 : maxInFlight,
			inFlightTimeoutMs,
			check: () => nextDue(pool, config.schema, queue),
			fire,
			// Claim mode: claim at once on every wake-up; read the due time only when nothing was claimed.
			claimFirst: claim !== undefined,
			connect: this.getNodeParameter('useListen', true) ? () => connectListener(config) : undefined,
			log: (level, message) => this.logger[level](message),
		});
		await watcher.start();
		return {
			closeFunction: async () => watcher.close(),
			manualTriggerFunction: async () => watcher.wake('manual'),
		};
	}
}
