/** Reserve Operation: its parameters and its execute (the node's one operation; nodes/shared/router.ts). */
import {
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeProperties,
} from 'n8n-workflow';
import { reserveOperations, prepareReserveItem, type ReserveResult } from '../../src/ledger/reserve';
import { releaseUnsent } from '../../src/ledger/confirm';
import { RESERVE_OUTPUTS, RESERVE_OUTPUT_LABELS, outputLabels, type ReserveDecision } from '../../src/ledger/states';
import { businessRequest } from '../../src/ledger/businessRequest';
import { reserveNextStep } from '../../src/ledger/nextStep';
import { operationKeyParameter, operationKeyProperties } from '../shared/operationKey';
import { getLedgerConnection } from '../shared/connection';
import { eventContext, jsonParameter } from '../shared/context';
import { batchFailure, errorItem, prepareItems } from '../shared/items';
import { cutText } from '../../src/text';
import { UNRECORDED, emptyOutputs } from '../shared/outputs';
import { InputError } from '../../src/errors';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange, rangeText } from '../shared/limits';

/** Output index per decision, in the order of RESERVE_OUTPUTS after Unrecorded (nodes/shared/outputs.ts). */
const OUTPUT = Object.fromEntries(RESERVE_OUTPUTS.map((o, i) => [o, i + 1])) as Record<ReserveDecision, number>;
/** The outcome outputs' display names (Unrecorded comes before them). */
export const OUTPUT_NAMES = outputLabels(RESERVE_OUTPUTS, RESERVE_OUTPUT_LABELS);

const description: INodeProperties[] = [
	{
		displayName:
			'Send the outside write only from <b>Proceed</b>, with <code>{{ $json.ledger.idempotencyKey }}</code> as its Idempotency-Key header, then record the result with Confirm Operation. ' +
			'<b>For an HTTP write use Guarded HTTP Request instead</b>: it reserves, sends and records in one node, so n8n\'s Retry never sends it twice. ' +
			'For any other write node, set its <b>Settings → On Error</b> to <b>Continue (using error output)</b> and connect both of its outputs to Confirm Operation: ' +
			'then the write never fails the execution, and n8n\'s Retry, which starts again at the node that failed, never runs it a second time.',
		name: 'notice',
		type: 'notice',
		default: '',
	},
	...operationKeyProperties,
	{
		displayName: 'Target',
		name: 'target',
		type: 'string',
		default: '',
		placeholder: 'e.g. payments-api',
		description: 'Name of the outside system the write goes to. Stored for Reconcile Unknown lookups.',
	},
	{
		displayName: 'Request',
		name: 'requestSource',
		type: 'options',
		options: [
			{
				name: 'From the Input Item',
				value: 'input',
				description:
					'After a Webhook node: its body (not its headers, query, URL or mode). After a Form Trigger: its fields, without submittedAt and formMode. Otherwise the whole item, without the ledger field of an earlier Reserve.',
			},
			{ name: 'Custom', value: 'custom', description: 'Set the fields that define the write yourself, e.g. { orderId, amount, currency }' },
		],
		default: 'input',
		description:
			'What is fingerprinted (SHA-256 over RFC 8785 canonical JSON): the same request again under the same key answers Done Before, a different one Conflict. It must name what the write does (amounts, recipients), not how it arrived (headers, timestamps, request IDs).',
	},
	{
		displayName: 'Request Fields',
		name: 'request',
		type: 'json',
		default: '',
		required: true,
		placeholder: '={{ { orderId: $json.body.orderId, amount: $json.body.amount } }}',
		description: 'The request that will be sent, as JSON: only what defines the write, not timestamps or delivery details',
		displayOptions: { show: { requestSource: ['custom'] } },
	},
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.leaseSeconds),
		default: LIMITS.leaseSeconds.default,
		description:
			`How long this execution holds the operation, in seconds (${rangeText(LIMITS.leaseSeconds)}). Choose more than the write can take. A lease that expires without Confirm makes the operation unknown, never free to send again.`,
	},
	{
		displayName: 'Settle Window (Seconds)',
		name: 'settleSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.settleWindowSeconds),
		default: LIMITS.settleWindowSeconds.default,
		description:
			`How long a write may still land at the target after the operation became unknown (or after its lease ended), in seconds (${rangeText(LIMITS.settleWindowSeconds)}). Stored with the operation: Reconcile Unknown claims it only after this window and the database refuses "did not happen" from an earlier lookup. Choose more than the target's timeout plus its retries.`,
	},
];

async function execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const outputs = emptyOutputs(1 + RESERVE_OUTPUTS.length);
	const { prepared, errorItems } = prepareItems(this, items, (i, item) => {
		const operationKey = operationKeyParameter(this, i);
		const request =
			this.getNodeParameter('requestSource', i, 'input') === 'custom'
				? customRequest(this, i)
				: businessRequest(item.json).request;
		return prepareReserveItem(i, {
			operationKey,
			request,
			target: this.getNodeParameter('target', i, ''),
			leaseSeconds: this.getNodeParameter('leaseSeconds', i),
			settleSeconds: this.getNodeParameter('settleSeconds', i, 120),
		});
	});
	outputs[UNRECORDED].push(...errorItems);
	if (prepared.length === 0) return outputs;

	let results: ReserveResult[];
	let connection: Awaited<ReturnType<typeof getLedgerConnection>>;
	try {
		connection = await getLedgerConnection(this);
		const { pool, schema, bounds } = connection;
		results = await reserveOperations(
			pool,
			schema,
			prepared.map((p) => p.value),
			eventContext(this),
			bounds,
		);
	} catch (e) {
		outputs[UNRECORDED].push(...batchFailure(this, e, 'Reserve Operation', prepared.map((p) => p.index)));
		return outputs;
	}
	const proceeded = results.filter((r) => r.outcome === 'proceed').length;
	if (proceeded > 0 && this.getMode() === 'manual') addManualRunHint(this, proceeded);
	for (let k = 0; k < results.length; k++) {
		const r = results[k];
		const item = items[r.index];
		if (r.outcome === 'busy') {
			// The key stayed locked by another transaction past the lock timeout: nothing was recorded
			// for this item; the other items of the batch were decided normally.
			const message = `Reserve Operation could not decide operation key "${cutText(prepared[k].value.operationKey, 200)}": ${r.reason ?? 'the key is locked by another transaction'}`;
			if (this.continueOnFail()) {
				outputs[UNRECORDED].push(errorItem(this, message, r.index, true));
				continue;
			}
			// The node stops here and emits nothing, so no Proceed item of this batch ever left it: give
			// their leases back (failed, retryable) instead of letting them run out into unknown.
			const granted = results.flatMap((x, n) =>
				x.outcome === 'proceed' && x.leaseToken ? [{ operationKey: prepared[n].value.operationKey, leaseToken: x.leaseToken }] : [],
			);
			const released = await releaseUnsent(
				connection.pool,
				connection.schema,
				granted,
				`Not sent: Reserve Operation stopped the workflow before emitting this batch (${message})`,
				eventContext(this),
				connection.bounds,
			).then(
				(rows) => rows.filter((x) => x.result === 'recorded').length,
				() => 0,
			);
			throw new NodeOperationError(this.getNode(), message, {
				itemIndex: r.index,
				description:
					`Another database transaction held this operation key for longer than the credential's Lock Timeout. Nothing was recorded for this item, so running it again is safe. ` +
					(granted.length === 0
						? 'No other item of this batch was given a lease.'
						: released === granted.length
							? `The ${granted.length} other item(s) of this batch that had been given a lease were released (recorded as failed, retryable: not sent), so the next run proceeds with them.`
							: `Of the ${granted.length} other item(s) of this batch that had been given a lease, ${released} could be released; the rest turn unknown when their lease runs out (their write was never sent; Reconcile Unknown settles them).`),
			});
		}
		const ledger: IDataObject = {
			operationKey: prepared[k].value.operationKey,
			outcome: r.outcome,
			status: r.status,
			attempt: r.attempt,
			leaseToken: r.leaseToken,
			leaseExpiresAt: r.leaseExpiresAt,
			idempotencyKey: r.idempotencyKey,
			externalRef: r.externalRef,
			replay: r.outcome === 'already_succeeded',
		};
		if (r.outcome === 'already_succeeded') {
			ledger.response = r.response as IDataObject;
			ledger.responseTruncated = r.responseTruncated;
		}
		if (r.outcome === 'failed_permanently' || r.outcome === 'needs_reconcile' || r.outcome === 'conflict') ledger.reason = r.reason;
		if (r.repeatOfItem !== null) {
			ledger.reason = r.reason;
			ledger.repeatOfItem = r.repeatOfItem;
		}
		const next = reserveNextStep(r.outcome, r.status, r.leaseExpiresAt);
		if (next !== null) ledger.nextStep = next;
		outputs[OUTPUT[r.outcome]].push({
			json: { ...item.json, ledger },
			binary: item.binary,
			pairedItem: { item: r.index },
		});
	}
	return outputs;
}

/**
 * Request: Custom. The fields must be given: an empty value would fingerprint every request of the
 * key alike, so a different amount would answer Done Before instead of Conflict.
 * @throws NodeOperationError (not JSON, a member name twice) or InputError (empty).
 */
function customRequest(fns: IExecuteFunctions, i: number): unknown {
	const value = jsonParameter(fns, fns.getNodeParameter('request', i, ''), 'The request', i, false);
	if (value === null || value === undefined || (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0)) {
		throw new InputError('Request Fields is empty: give the fields that define the write (e.g. { orderId, amount, currency }), or choose Request: From the Input Item');
	}
	return value;
}

/**
 * A run from the editor (Execute step / Execute workflow, mode "manual") writes to the real ledger.
 * Shows a hint in the output pane saying so and how to clear a test reservation (docs/nodes/ReserveOperation.md,
 * "Clearing a test reservation"). `addExecutionHints` exists in n8n-workflow 2.x; older hosts skip the hint.
 */
function addManualRunHint(fns: IExecuteFunctions, count: number): void {
	if (typeof fns.addExecutionHints !== 'function') return;
	fns.addExecutionHints({
		type: 'warning',
		location: 'outputPane',
		message:
			`This manual run made ${count} real reservation(s) in the ledger: a later run with the same operation key answers In Progress, ` +
			'and Reconcile once the lease ends. To clear a test reservation, record its outcome with Confirm Operation ' +
			'(Outcome: Failed, Retryable on), or use a key with a test Version (e.g. v-test-1). See "Clearing a test reservation" in docs/nodes/ReserveOperation.md on the package\'s GitHub page.',
	});
}

export const reserveOperation: NodeOperation = {
	// Not listed (a map of one has no Operation parameter); named for the router and CONTRIBUTING.md.
	option: { name: 'Reserve', action: 'Reserve an operation key', description: 'Reserve a business operation key before an outside write' },
	description,
	execute,
};
