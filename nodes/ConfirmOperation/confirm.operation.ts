/** Confirm Operation: its parameters and its execute (the node's one operation; nodes/shared/router.ts). */
import {
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeProperties,
} from 'n8n-workflow';
import { CONFIRM_OUTPUTS, CONFIRM_OUTPUT_LABELS, outputLabels } from '../../src/ledger/states';
import { classifyHttpResult, parseStatusOverrides, type StatusOverrides } from '../../src/ledger/classify';
import { confirmOperations, DEFAULT_MAX_RESPONSE_BYTES, prepareConfirmItem, type ConfirmResultRow } from '../../src/ledger/confirm';
import { getLedgerConnection } from '../shared/connection';
import { eventContext, jsonParameter } from '../shared/context';
import { batchFailure, errorItem, prepareItems } from '../shared/items';
import { cutText } from '../../src/text';
import { recordedNextStep } from '../../src/ledger/nextStep';
import { fieldFromLineage, upstreamNodeNames } from '../shared/lineage';
import { UNRECORDED, emptyOutputs } from '../shared/outputs';
import type { NodeOperation } from '../shared/router';

/** Output index per result, after Unrecorded (nodes/shared/outputs.ts). */
const OUT = Object.fromEntries(CONFIRM_OUTPUTS.map((o, i) => [o, i + 1])) as Record<(typeof CONFIRM_OUTPUTS)[number], number>;
export const OUTPUT_NAMES = outputLabels(CONFIRM_OUTPUTS, CONFIRM_OUTPUT_LABELS);
const RESERVE_TYPE_SUFFIX = '.reserveOperation';

const parseConfirmOverrides = (text: unknown): StatusOverrides => parseStatusOverrides(text) as StatusOverrides;

const description: INodeProperties[] = [
	{
		displayName: 'Outcome From',
		name: 'outcomeSource',
		type: 'options',
		options: [
			{
				name: 'HTTP Request Result',
				value: 'httpResult',
				description:
					'Classify the HTTP Request node output by "could it have taken effect?": 2xx succeeded; 401, 403, 423, 425, 429 failed and retryable; other 4xx failed; 408, 409, 5xx, timeouts and resets unknown; connection refused failed and retryable (docs/http-classification.md)',
			},
			{ name: 'Explicit', value: 'explicit', description: 'Set the outcome yourself, e.g. from an expression' },
		],
		default: 'httpResult',
	},
	{
		displayName: 'Outcome',
		name: 'outcome',
		type: 'options',
		options: [
			{ name: 'Succeeded', value: 'succeeded', description: 'The write took effect' },
			{ name: 'Failed', value: 'failed', description: 'The write definitely did not take effect' },
			{ name: 'Unknown', value: 'unknown', description: 'It may or may not have taken effect: Reconcile Unknown will ask the target' },
		],
		default: 'succeeded',
		displayOptions: { show: { outcomeSource: ['explicit'] } },
	},
	{
		displayName: 'Retryable',
		name: 'retryable',
		type: 'boolean',
		default: true,
		description: 'Whether a later Reserve of the same key may try again (attempt + 1)',
		displayOptions: { show: { outcomeSource: ['explicit'], outcome: ['failed'] } },
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		description: 'Why it failed or is unknown; stored with the operation (at most 2000 characters)',
		displayOptions: { show: { outcomeSource: ['explicit'], outcome: ['failed', 'unknown'] } },
	},
	{
		displayName: 'External Reference',
		name: 'externalReference',
		type: 'string',
		default: '={{ $json.id ?? $json.body?.id }}',
		description: "The target system's ID for what was written (e.g. the payment ID). Stored and returned to replays.",
	},
	{
		displayName: 'Find Operation',
		name: 'lineage',
		type: 'options',
		options: [
			{
				name: 'Automatically',
				value: 'auto',
				description: 'Follow each item back to the Reserve Operation node it came from; no expressions needed',
			},
			{ name: 'Explicit', value: 'explicit', description: 'Give the operation key and lease token' },
		],
		default: 'auto',
	},
	{
		displayName: 'Operation Key',
		name: 'operationKey',
		type: 'string',
		default: '',
		required: true,
		displayOptions: { show: { lineage: ['explicit'] } },
	},
	{
		displayName: 'Lease Token',
		name: 'leaseToken',
		// eslint-disable-next-line n8n-nodes-base/node-param-type-options-password-missing -- a fencing token, not a secret
		type: 'string',
		default: '',
		required: true,
		description: 'The ledger.leaseToken Reserve Operation returned; it fences out holders whose lease was lost',
		displayOptions: { show: { lineage: ['explicit'] } },
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Max Response Size (Bytes)',
				name: 'maxResponseBytes',
				type: 'number',
				typeOptions: { minValue: 2, maxValue: 16777216 },
				default: DEFAULT_MAX_RESPONSE_BYTES,
				description: 'Largest response stored, in bytes of canonical JSON',
			},
			{
				displayName: 'Oversized Response',
				name: 'oversizeResponse',
				type: 'options',
				options: [
					{ name: 'Store Truncated', value: 'truncate', description: 'Keep the reference and a 1 KiB preview' },
					{ name: 'Reject Item', value: 'error', description: 'Record nothing for the item and report an error' },
				],
				default: 'truncate',
			},
			{
				displayName: 'Reserve Node Name',
				name: 'reserveNode',
				type: 'string',
				default: '',
				description: 'With automatic lineage: the Reserve Operation node to follow, when there is more than one upstream',
			},
			{
				displayName: 'Status Code Overrides',
				name: 'statusOverrides',
				type: 'string',
				default: '',
				placeholder: 'e.g. 409=failed, 402=failed_retryable',
				description:
					'With Outcome From "HTTP Request Result": change the classification of single status codes. Comma-separated code=verdict pairs, verdict one of succeeded, failed, failed_retryable, unknown. Default table: docs/http-classification.md.',
			},
			{
				displayName: 'Store Response',
				name: 'storeResponse',
				type: 'boolean',
				default: true,
				description: 'Whether to store the response body, returned to later replays by Reserve Operation',
			},
		],
	},
];

async function execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const outputs = emptyOutputs(1 + OUTPUT_NAMES.length);
	let reserveNodes: string[] | undefined;
	const findReserveNodes = (i: number): string[] =>
		(reserveNodes ??= upstreamNodeNames(this, RESERVE_TYPE_SUFFIX, this.getNodeParameter('options.reserveNode', i, '') as string));

	const { prepared, errorItems } = prepareItems(this, items, (i, item) => {
		const lineage = this.getNodeParameter('lineage', i) as string;
		let operationKey: unknown;
		let leaseToken: unknown;
		if (lineage === 'explicit') {
			operationKey = this.getNodeParameter('operationKey', i);
			leaseToken = this.getNodeParameter('leaseToken', i);
		} else {
			const ledger = fieldFromLineage(this, i, item, findReserveNodes(i), 'ledger', 'leaseToken', 'Reserve Operation');
			operationKey = ledger.operationKey;
			leaseToken = ledger.leaseToken;
		}
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		const source = this.getNodeParameter('outcomeSource', i) as string;
		const { ledger: _dropped, ...ownJson } = item.json;
		void _dropped;
		let outcome: unknown;
		let reason: unknown;
		let retryable: unknown;
		let response: unknown;
		if (source === 'explicit') {
			outcome = this.getNodeParameter('outcome', i);
			retryable = outcome === 'failed' ? this.getNodeParameter('retryable', i, true) : false;
			reason = outcome === 'succeeded' ? null : this.getNodeParameter('reason', i, '');
			response = ownJson;
		} else {
			const c = classifyHttpResult(ownJson, parseConfirmOverrides(options.statusOverrides));
			outcome = c.outcome;
			retryable = c.retryable;
			reason = c.reason;
			response = c.outcome === 'succeeded' ? c.body : null;
		}
		const externalRef = outcome === 'succeeded' ? this.getNodeParameter('externalReference', i, '') : null;
		return {
			item: prepareConfirmItem(i, {
				operationKey,
				leaseToken,
				outcome,
				externalRef,
				reason,
				retryable,
				// A text body (the HTTP Request node's full response with Response Format: Text) is stored
				// as a JSON string, never parsed: the write has happened, so its answer is kept as it came.
				response: options.storeResponse === false ? null : typeof response === 'string' ? response : jsonParameter(this, response, 'The response', i, false),
				maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
				oversize: (options.oversizeResponse as 'truncate' | 'error') ?? 'truncate',
			}),
			reported: outcome as string,
		};
	});
	outputs[UNRECORDED].push(...errorItems);
	if (prepared.length === 0) return outputs;

	let results: ConfirmResultRow[];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		results = await confirmOperations(pool, schema, prepared.map((p) => p.value.item), eventContext(this), bounds);
	} catch (e) {
		outputs[UNRECORDED].push(...batchFailure(this, e, 'Confirm Operation', prepared.map((p) => p.index)));
		return outputs;
	}
	for (let k = 0; k < results.length; k++) {
		const r = results[k];
		const p = prepared[k].value;
		const item = items[r.index];
		if (r.result === 'not_found' || r.result === 'busy') {
			const message =
				r.result === 'busy'
					? `Operation key "${cutText(p.item.operationKey, 200)}" stayed locked by another transaction beyond the lock timeout; nothing was recorded for this item and confirming it again is safe`
					: `No reservation exists for operation key "${cutText(p.item.operationKey, 200)}"; nothing was recorded for this item`;
			if (this.continueOnFail()) {
				outputs[UNRECORDED].push(errorItem(this, message, r.index, r.result === 'busy'));
				continue;
			}
			throw new NodeOperationError(this.getNode(), message, {
				itemIndex: r.index,
				description: 'The other items of this batch were recorded.',
			});
		}
		const ledger: IDataObject = {
			operationKey: p.item.operationKey,
			reported: p.reported,
			result: r.result,
			status: r.status,
			attempt: r.attempt,
			externalRef: r.externalRef,
			reason: p.item.reason,
			// For a reported failure: may a new attempt be reserved (what this item reported and, when
			// result is recorded, what was stored); null when this item did not report a failure.
			retryable: p.item.outcome === 'failed' ? p.item.retryable : null,
			late: r.late,
			stale: r.result === 'stale',
			possibleDuplicate: r.possibleDuplicate,
			responseTruncated: p.item.responseTruncated,
		};
		const next = recordedNextStep(r.status, p.item.outcome === 'failed' ? p.item.retryable : null, r.result === 'stale');
		if (next !== null) ledger.nextStep = next;
		const out =
			r.result === 'stale'
				? OUT.stale
				: r.status === 'succeeded'
					? OUT.succeeded
					: r.status === 'failed'
						? OUT.failed
						: r.status === 'review'
							? OUT.review
							: OUT.unknown;
		outputs[out].push({ json: { ...item.json, ledger }, binary: item.binary, pairedItem: { item: r.index } });
	}
	return outputs;
}

export const confirmOperation: NodeOperation = {
	// Not listed (a map of one has no Operation parameter); named for the router and CONTRIBUTING.md.
	option: { name: 'Confirm', action: 'Confirm an operation', description: 'Record the outcome of an outside write, fenced by the lease token' },
	description,
	execute,
};
