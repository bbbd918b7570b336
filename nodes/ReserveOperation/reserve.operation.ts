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
import { RESERVE_OUTCOMES, RESERVE_OUTPUT_LABELS, outputLabels } from '../../src/ledger/states';
import { buildOperationKey } from '../../src/ledger/validate';
import { getLedgerConnection } from '../shared/connection';
import { eventContext, jsonParameter } from '../shared/context';
import { batchFailure, errorItem, prepareItems } from '../shared/items';
import { cutText } from '../../src/text';
import { UNRECORDED, emptyOutputs } from '../shared/outputs';
import type { NodeOperation } from '../shared/router';

/** Output index per outcome, in the order of RESERVE_OUTCOMES after Unrecorded (nodes/shared/outputs.ts). */
const OUTPUT = Object.fromEntries(RESERVE_OUTCOMES.map((o, i) => [o, i + 1])) as Record<(typeof RESERVE_OUTCOMES)[number], number>;
/** The outcome outputs' display names (Unrecorded comes before them). */
export const OUTPUT_NAMES = outputLabels(RESERVE_OUTCOMES, RESERVE_OUTPUT_LABELS);

const description: INodeProperties[] = [
	{
		displayName:
			'Send the outside write only from the <b>Proceed</b> output, with <code>{{ $json.ledger.idempotencyKey }}</code> as its Idempotency-Key header, then record the result with Confirm Operation',
		name: 'notice',
		type: 'notice',
		default: '',
	},
	{
		displayName: 'Operation Key',
		name: 'keyMode',
		type: 'options',
		options: [
			{
				name: 'Build From Parts',
				value: 'parts',
				description: 'Resource:action:entity:version, e.g. payment:charge:order-1001:v1',
			},
			{ name: 'Custom Key', value: 'custom', description: 'Any key up to 512 bytes' },
		],
		default: 'parts',
		description: 'The business intent this write carries out. The same intent must always give the same key; never use the execution ID.',
	},
	{
		displayName: 'Resource',
		name: 'resource',
		type: 'string',
		default: '',
		placeholder: 'payment',
		required: true,
		description: 'What kind of thing the write creates or changes, e.g. payment, invoice, email',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Action',
		name: 'action',
		type: 'string',
		default: '',
		placeholder: 'charge',
		required: true,
		description: 'What the write does, e.g. charge, create, send',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Entity',
		name: 'entity',
		type: 'string',
		default: '',
		placeholder: 'e.g. {{ $json.orderId }}',
		required: true,
		description: 'The business identity the write is for, e.g. an order or customer ID',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Version',
		name: 'version',
		type: 'string',
		default: 'v1',
		description: 'Bump it when the same entity may legitimately get the write again (e.g. a second invoice run)',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Custom Key',
		name: 'operationKey',
		type: 'string',
		default: '',
		placeholder: 'e.g. invoice:create:{{ $json.customerId }}:v3',
		required: true,
		description: 'The operation key: 1 to 512 bytes, no control characters, no leading or trailing spaces',
		displayOptions: { show: { keyMode: ['custom'] } },
	},
	{
		displayName: 'Target',
		name: 'target',
		type: 'string',
		default: '',
		placeholder: 'payments-api',
		description: 'Name of the outside system the write goes to. Stored for Reconcile Unknown lookups.',
	},
	{
		displayName: 'Request',
		name: 'request',
		type: 'json',
		default: '={{ $json }}',
		description:
			'The request that will be sent. Its fingerprint (SHA-256 over RFC 8785 canonical JSON) tells a retry of this request from a different request under the same key (a conflict). Include what defines the write (amounts, recipients), not timestamps.',
	},
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 604800 },
		default: 300,
		description:
			'How long this execution holds the operation, in seconds (1 to 604800). Choose more than the write can take. A lease that expires without Confirm makes the operation unknown, never free to send again.',
	},
	{
		displayName: 'Settle Window (Seconds)',
		name: 'settleSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 2592000 },
		default: 120,
		description:
			'How long a write may still land at the target after the operation became unknown (or after its lease ended), in seconds (1 to 2592000). Stored with the operation: Reconcile Unknown claims it only after this window and the database refuses "did not happen" from an earlier lookup. Choose more than the target\'s timeout plus its retries.',
	},
];

async function execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const outputs = emptyOutputs(1 + RESERVE_OUTCOMES.length);
	const { prepared, errorItems } = prepareItems(this, items, (i) => {
		const keyMode = this.getNodeParameter('keyMode', i) as string;
		const operationKey =
			keyMode === 'custom'
				? this.getNodeParameter('operationKey', i)
				: buildOperationKey({
						resource: this.getNodeParameter('resource', i),
						action: this.getNodeParameter('action', i),
						entity: this.getNodeParameter('entity', i),
						version: this.getNodeParameter('version', i),
					});
		return prepareReserveItem(i, {
			operationKey,
			request: jsonParameter(this, this.getNodeParameter('request', i), 'The request', i, false),
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
		outputs[OUTPUT[r.outcome]].push({
			json: { ...item.json, ledger },
			binary: item.binary,
			pairedItem: { item: r.index },
		});
	}
	return outputs;
}

/**
 * A run from the editor (Execute step / Execute workflow, mode "manual") writes to the real ledger.
 * Shows a hint in the output pane saying so and how to clear a test reservation (README, "Clearing
 * a test reservation"). `addExecutionHints` exists in n8n-workflow 2.x; older hosts skip the hint.
 */
function addManualRunHint(fns: IExecuteFunctions, count: number): void {
	if (typeof fns.addExecutionHints !== 'function') return;
	fns.addExecutionHints({
		type: 'warning',
		location: 'outputPane',
		message:
			`This manual run made ${count} real reservation(s) in the ledger: a later run with the same operation key answers In Progress, ` +
			'and Reconcile once the lease ends. To clear a test reservation, record its outcome with Confirm Operation ' +
			'(Outcome: Failed, Retryable on), or use a key with a test Version (e.g. v-test-1). See "Clearing a test reservation" in the README.',
	});
}

export const reserveOperation: NodeOperation = {
	// Not listed (a map of one has no Operation parameter); named for the router and CONTRIBUTING.md.
	option: { name: 'Reserve', value: 'reserve', action: 'Reserve an operation key', description: 'Reserve a business operation key before an outside write' },
	description,
	execute,
};
