import {
	NodeConnectionTypes,
	type IDataObject,
	type INodeExecutionData,
	type INodeProperties,
	type INodeType,
	type INodeTypeDescription,
	type IRun,
	type ITriggerFunctions,
	type ITriggerResponse,
} from 'n8n-workflow';
import {
	checkGroups,
	checkInt,
	checkQueueName,
	checkSeconds,
	connectListener,
	groupsFromRows,
	nextDueFor,
	prepareDequeueOptions,
	queueChannel,
	QueueWatcher,
	type ClaimedTask,
	type WakeReason,
} from '../../src/queue';
import { ledgerConnectionTest, openLedgerConnection, toConnectionConfig } from '../shared/connection';
import { CREDENTIAL_NAME, loadLedgerCredential } from '../shared/credential';
import { priorityGroupsProperty } from '../shared/groups';
import { LIMITS, numberRange } from '../shared/limits';
import { claimWithSettles, settleCarried, type CarriedSettle } from './settleOnFinish';

/** The Options entries. */
const AGING_OPTION: INodeProperties = {
	displayName: 'Aging Interval (Seconds)',
	name: 'agingSeconds',
	type: 'number',
	typeOptions: numberRange(LIMITS.agingSeconds),
	default: LIMITS.agingSeconds.default,
	description:
		'Claim mode: tasks that have waited longer than this many seconds move to the front, oldest first, within a tenth of the interval (at most 1 s). 0 switches aging off.',
};
const TIMEOUT_OPTION: INodeProperties = {
	displayName: 'Execution Timeout (Seconds)',
	name: 'inFlightTimeoutSeconds',
	type: 'number',
	typeOptions: numberRange(LIMITS.triggerExecutionTimeoutSeconds),
	default: LIMITS.triggerExecutionTimeoutSeconds.default,
	description: 'After this long, a started execution no longer counts against Max Parallel Executions',
};

/** Starts consumer executions when a Priority Dequeue queue has work: LISTEN/NOTIFY as a hint, polling as the truth. */
export class PriorityDequeueTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Priority Dequeue Trigger',
		name: 'priorityDequeueTrigger',
		icon: { light: 'file:trigger.svg', dark: 'file:trigger.dark.svg' },
		group: ['trigger'],
		// Priority Groups (nodes/shared/groups.ts) for both modes: Claim Tasks claims them, Wake Up
		// watches only them (the groups its consumer claims). Backoff and "Max Executions per Minute".
		version: 1,
		subtitle: '={{ ($parameter["mode"] === "claim" ? "claim: " : "wake up: ") + $parameter["queue"] }}',
		// n8n's node creator merges this trigger into Priority Dequeue's entry (its type name minus
		// "Trigger") and shows this description there, so it speaks for both nodes.
		description: 'Weighted-fair Postgres task queue: start consumers when work is ready, claim and settle tasks with leases',
		eventTriggerDescription: 'Waiting for ready tasks in the queue',
		activationMessage: 'Consumer executions now start when the queue has ready work (or claimed tasks, in Claim Tasks mode).',
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
				// Shown as "Trigger On" so that n8n's node creator lists one trigger entry per option
				// (its `action`) instead of a made-up "On new Priority Dequeue event".
				displayName: 'Trigger On',
				name: 'mode',
				type: 'options',
				options: [
					{
						name: 'Ready Work (Wake Up)',
						value: 'wakeUp',
						action: 'On ready work, wake a consumer',
						description: 'Emit one item saying work is ready; a Priority Dequeue node (Dequeue) after it claims the tasks',
					},
					{
						name: 'Ready Work (Claim Tasks)',
						value: 'claim',
						action: 'On ready work, claim tasks',
						description: 'Claim the tasks here (same weighted-fair claim as Dequeue) and emit one item per task',
					},
				],
				default: 'wakeUp',
			},
			priorityGroupsProperty(
				undefined,
				'Claim Tasks: the priority groups to claim, highest first (drag to reorder), with their weighted-fair share. Wake Up: the groups the consumer\'s Dequeue claims (weights are not used here); only work of these groups starts an execution.',
			),
			{
				displayName: 'Batch Size',
				name: 'batchSize',
				type: 'number',
				typeOptions: numberRange(LIMITS.dequeueBatchSize),
				default: LIMITS.dequeueBatchSize.default,
				description: 'Maximum number of tasks to claim per execution',
				displayOptions: { show: { mode: ['claim'] } },
			},
			{
				displayName: 'Lease (Seconds)',
				name: 'leaseSeconds',
				type: 'number',
				typeOptions: numberRange(LIMITS.queueLeaseSeconds),
				default: LIMITS.queueLeaseSeconds.default,
				description: 'Visibility timeout of each claimed task',
				displayOptions: { show: { mode: ['claim'] } },
			},
			{
				displayName: 'Settle Tasks',
				name: 'settleTasks',
				type: 'options',
				options: [
					{
						name: 'By a Priority Dequeue Node in the Workflow',
						value: 'byNode',
						description: 'A Priority Dequeue node (Complete, Fail, Release) settles each task; a task left unsettled is claimable again when its lease expires',
					},
					{
						name: 'When the Execution Finishes',
						value: 'onFinish',
						description: 'The trigger settles the tasks it claimed when n8n reports the execution finished: completed on success, failed on error',
					},
				],
				default: 'byNode',
				description:
					'When the Execution Finishes: once n8n reports the execution\'s run, the trigger settles its claimed tasks in one call (bounded by the credential\'s timeouts): status success → completed, in the same transaction as the next claim; error, crashed or canceled → failed with the run\'s error message (retried after the backoff, 5 s doubling up to 1 h, or dead at Max Attempts); waiting (a Wait node), running, unknown or no run at all → left as claimed, and the lease (Lease (Seconds)) decides. A task a node already settled stays as it is. In queue mode the run arrives from the worker too, but n8n gave none for a few very fast executions: their tasks run again after the lease.',
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
				typeOptions: numberRange(LIMITS.triggerPollSeconds),
				default: LIMITS.triggerPollSeconds.default,
				description:
					'How often to check the queue even without a notification (and how late work is noticed when LISTEN/NOTIFY is off). Delayed tasks are picked up at their time.',
			},
			{
				displayName: 'Max Parallel Executions',
				name: 'maxInFlight',
				type: 'number',
				typeOptions: numberRange(LIMITS.triggerMaxInFlight),
				default: LIMITS.triggerMaxInFlight.default,
				description: 'Executions this trigger may have running at once; more work waits until one finishes',
			},
			{
				displayName: 'Max Executions per Minute',
				name: 'maxPerMinute',
				type: 'number',
				typeOptions: numberRange(LIMITS.triggerMaxPerMinute),
				default: LIMITS.triggerMaxPerMinute.default,
				description:
					'Upper bound of executions this trigger starts in any 60-second window, so also of its throughput: at most this × the batch size tasks a minute (1,200 with the defaults). Besides this cap, after an execution that fails or claims nothing it waits 1 s, doubling up to 60 s, until an execution makes progress.',
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [AGING_OPTION, TIMEOUT_OPTION],
			},
		],
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const config = toConnectionConfig(await loadLedgerCredential(this));
		const queue = checkQueueName(this.getNodeParameter('queue') as string);
		const mode = this.getNodeParameter('mode', 'wakeUp') as string;
		const options = this.getNodeParameter('options', {}) as IDataObject;
		const pollMs = checkSeconds(this.getNodeParameter('pollSeconds', LIMITS.triggerPollSeconds.default), 'Poll interval', LIMITS.triggerPollSeconds) * 1000;
		const maxInFlight = checkInt(this.getNodeParameter('maxInFlight', LIMITS.triggerMaxInFlight.default), 'Max parallel executions', LIMITS.triggerMaxInFlight);
		const inFlightTimeoutMs = checkSeconds(options.inFlightTimeoutSeconds ?? LIMITS.triggerExecutionTimeoutSeconds.default, 'Execution timeout', LIMITS.triggerExecutionTimeoutSeconds) * 1000;
		const claim =
			mode === 'claim'
				? // Checked once here (src/queue: prepareDequeueOptions), not again at every claim.
					prepareDequeueOptions({
						queue,
						limit: this.getNodeParameter('batchSize', LIMITS.dequeueBatchSize.default) as number,
						leaseSeconds: this.getNodeParameter('leaseSeconds', LIMITS.queueLeaseSeconds.default) as number,
						agingSeconds: (options.agingSeconds ?? LIMITS.agingSeconds.default) as number,
						groups: groupsFromRows(this.getNodeParameter('priorityGroups')),
					})
				: undefined;
		// Wake Up: only due work of the consumer's groups (Priority Groups) starts an execution, and
		// a notification (which anyone who can connect may send, and which does not say the group)
		// is only a hint to check: it never starts an execution by itself.
		const watchGroups = claim ? null : checkGroups(groupsFromRows(this.getNodeParameter('priorityGroups'))).map((g) => g.name);
		const maxPerMinute = checkInt(this.getNodeParameter('maxPerMinute', LIMITS.triggerMaxPerMinute.default), 'Max executions per minute', LIMITS.triggerMaxPerMinute);
		// Through the nodes' one door (nodes/shared/connection.ts): a pool handle that holds no pool
		// between calls, the schema applied or checked, and the credential's statement and lock
		// timeouts, which bound every claim and due check (src/db/bounds.ts).
		const { pool, schema, bounds } = await openLedgerConnection(config);

		const settleOnFinish = claim !== undefined && this.getNodeParameter('settleTasks', 'byNode') === 'onFinish';
		const log = (level: 'debug' | 'info' | 'warn', message: string) => this.logger[level](message);

		const manual = this.getMode() === 'manual';
		/**
		 * `tasks`: with Settle Tasks "When the Execution Finishes", the claimed tasks to settle by the
		 * run (settleOnFinish.ts): `finished` resolves with them and the run as `settle`, which the
		 * watcher hands to the next claim (completed in the claim's own transaction) or, when no
		 * claim follows, to settleCarried alone (src/queue/watcher.ts). No execution starts in the
		 * freed slot before that settle was sent: it rides on the claim that starts it.
		 */
		const emitAndWait = (items: INodeExecutionData[], tasks?: ClaimedTask[]): { finished: Promise<unknown> } => {
			const done = this.helpers.createDeferredPromise<IRun>();
			this.emit([items], undefined, done);
			// The execution's result tells the watcher whether to back off (a failed run).
			if (!tasks) return { finished: done.promise.then((run) => ({ failed: runFailed(run) })) };
			return {
				finished: done.promise.then(
					(run) => ({ failed: runFailed(run), settle: { tasks, run } satisfies CarriedSettle }),
					async (e: unknown) => {
						// n8n gave no run: nothing is settled, the lease decides, and the tasks run again
						// after it. A warning: the work may be done twice.
						log(
							'warn',
							`Priority Dequeue Trigger: n8n reported no run for the execution (${(e as Error)?.message ?? String(e)}); ${tasks.length} task(s) left as claimed: their lease decides, and they run again after it expires`,
						);
						return { failed: true };
					},
				),
			};
		};
		const fire = async (reason: WakeReason, settles?: unknown[]): Promise<{ finished: Promise<unknown> } | undefined> => {
			if (claim) {
				const tasks = await claimWithSettles(pool, schema, bounds, claim, settles, log);
				if (tasks.length === 0) return undefined;
				return emitAndWait(
					tasks.map((t) => ({ json: JSON.parse(JSON.stringify(t)) as IDataObject })),
					settleOnFinish ? tasks : undefined,
				);
			}
			return emitAndWait([{ json: { queue, reason, wokeAt: new Date().toISOString() } }]);
		};
		const watcher = new QueueWatcher({
			channel: queueChannel(schema, queue),
			pollMs,
			maxInFlight: manual ? 1 : maxInFlight,
			inFlightTimeoutMs,
			check: () => nextDueFor(pool, schema, queue, watchGroups, bounds),
			// Wake Up checks a notification first (see watchGroups); Claim Tasks claims at once and
			// starts an execution only for tasks it claimed.
			directOnNotify: claim !== undefined,
			maxPerMinute: manual ? undefined : maxPerMinute,
			fire,
			settle: (settles) => settleCarried(pool, schema, bounds, settles, log),
			// Claim mode: claim at once on every wake-up; read the due time only when nothing was claimed.
			claimFirst: claim !== undefined,
			connect: this.getNodeParameter('useListen', true) ? () => connectListener(config) : undefined,
			// The LISTEN connection is probed as often as the queue is polled, at least every 30 s.
			probeMs: Math.min(pollMs, 30_000),
			log,
		});
		await watcher.start();
		return {
			closeFunction: async () => watcher.close(),
			manualTriggerFunction: async () => watcher.wake('manual'),
		};
	}
}

/** A finished run counts as failed when n8n marks it so or it carries an error. */
function runFailed(run: IRun | undefined): boolean {
	if (!run) return false;
	if (run.status === 'error' || run.status === 'crashed' || run.status === 'canceled') return true;
	return Boolean(run.data?.resultData?.error);
}
