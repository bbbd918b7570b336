/** Reconcile Unknown, operation "Resolve": record what the lookup at the target found. */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData, type INodeProperties } from 'n8n-workflow';
import { parseStatusOverrides } from '../../src/ledger/classify';
import { RECONCILE_RESOLUTIONS, classifyLookup } from '../../src/ledger/reconcile/lookup';
import { checkResolveOptions, prepareResolveItem, resolveUnknown, type ResolveResultRow } from '../../src/ledger/reconcile/resolve';
import { getLedgerConnection } from '../shared/connection';
import { eventContext } from '../shared/context';
import { batchFailure, errorItem, prepareItems } from '../shared/items';
import { cutText } from '../../src/text';
import { fieldFromLineage, upstreamNodeNames } from '../shared/lineage';
import { UNRECORDED, emptyOutputs } from '../shared/outputs';
import { OUTPUT_COUNT, resolveOutput } from './outputs';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange } from '../shared/limits';


export const resolveProperties: INodeProperties[] = [
	{
		displayName: 'Lookup Result From',
		name: 'lookupSource',
		type: 'options',
		options: [
			{
				name: 'HTTP Request Lookup',
				value: 'httpLookup',
				description:
					'Read the HTTP Request node that looked the write up by its idempotency key: 2xx with a reference means it happened; 404 or 410 means it did not; anything else is still unknown',
			},
			{ name: 'Explicit', value: 'explicit', description: 'Set the resolution yourself, e.g. from an expression' },
		],
		default: 'httpLookup',
	},
	{
		displayName: 'Resolution',
		name: 'resolution',
		type: 'options',
		options: [
			{ name: 'Happened', value: 'happened', description: 'The target has the write: record success with its reference' },
			{
				name: 'Did Not Happen',
				value: 'not_happened',
				description: 'The target has no record of it: record a retryable failure',
			},
			{ name: 'Still Unknown', value: 'still_unknown', description: 'The lookup could not tell: check again later' },
		],
		default: 'still_unknown',
		displayOptions: { show: { lookupSource: ['explicit'] } },
	},
	{
		displayName: 'External Reference',
		name: 'externalReference',
		type: 'string',
		default: '={{ $json.id ?? $json.body?.id }}',
		description: "The target's ID for the write found by the lookup (required for Happened)",
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		description: 'Note stored with the operation',
		displayOptions: { show: { lookupSource: ['explicit'] } },
	},
	{
		displayName: 'Status Code Overrides',
		name: 'statusOverrides',
		type: 'string',
		default: '',
		placeholder: 'e.g. 404=still_unknown, 403=still_unknown',
		description:
			'Change how a lookup answer is read, per status code: comma-separated code=resolution pairs, resolution one of happened, not_happened, still_unknown. Default: 2xx with a reference happened, 404 and 410 not_happened, anything else still_unknown. Use not_happened only for answers that prove the target has no such write.',
		displayOptions: { show: { lookupSource: ['httpLookup'] } },
	},
	{
		displayName: 'Max Checks',
		name: 'maxChecks',
		type: 'number',
		typeOptions: numberRange(LIMITS.resolveMaxChecks),
		default: LIMITS.resolveMaxChecks.default,
		description: 'After this many inconclusive checks the operation goes to human review (it is never deleted)',
	},
	{
		displayName: 'Backoff Base (Seconds)',
		name: 'backoffBaseSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.resolveBackoffBaseSeconds),
		default: LIMITS.resolveBackoffBaseSeconds.default,
		description: 'Wait before the next check after an inconclusive one, in seconds; doubles with each check',
	},
	{
		displayName: 'Backoff Ceiling (Seconds)',
		name: 'backoffMaxSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.resolveBackoffMaxSeconds),
		default: LIMITS.resolveBackoffMaxSeconds.default,
		description: 'Longest wait between checks, in seconds',
	},
	{
		displayName: 'Find Operation',
		name: 'lineage',
		type: 'options',
		options: [
			{ name: 'Automatically', value: 'auto', description: 'Follow each item back to the Reconcile Unknown (Claim) node it came from' },
			{ name: 'Explicit', value: 'explicit', description: 'Give the operation key and claim token' },
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
		displayName: 'Claim Token',
		name: 'claimToken',
		// eslint-disable-next-line n8n-nodes-base/node-param-type-options-password-missing -- a fencing token, not a secret
		type: 'string',
		default: '',
		required: true,
		displayOptions: { show: { lineage: ['explicit'] } },
	},
	{
		displayName: 'Claim Node Name',
		name: 'claimNode',
		type: 'string',
		default: '',
		description: 'With automatic lineage: the claiming Reconcile Unknown node to follow, when there is more than one upstream',
		displayOptions: { show: { lineage: ['auto'] } },
	},
];

const parseLookupOverrides = (text: unknown): Map<number, string> => parseStatusOverrides(text, RECONCILE_RESOLUTIONS);

export async function executeResolve(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = fns.getInputData();
	const outputs = emptyOutputs(OUTPUT_COUNT);
	let claimNodes: string[] | undefined;
	const { prepared, errorItems } = prepareItems(fns, items, (i, item) => {
		let operationKey: unknown;
		let claimToken: unknown;
		if (fns.getNodeParameter('lineage', i) === 'explicit') {
			operationKey = fns.getNodeParameter('operationKey', i);
			claimToken = fns.getNodeParameter('claimToken', i);
		} else {
			claimNodes ??= upstreamNodeNames(fns, '.reconcileUnknown', fns.getNodeParameter('claimNode', i, '') as string);
			const rec = fieldFromLineage(fns, i, item, claimNodes, 'reconcile', 'claimToken', 'Reconcile Unknown (Claim)');
			operationKey = rec.operationKey;
			claimToken = rec.claimToken;
		}
		const reference = fns.getNodeParameter('externalReference', i, '');
		let resolution: unknown;
		let reason: unknown;
		let response: unknown = null;
		if (fns.getNodeParameter('lookupSource', i) === 'explicit') {
			resolution = fns.getNodeParameter('resolution', i);
			reason = fns.getNodeParameter('reason', i, '');
		} else {
			const { reconcile: _r, ...own } = item.json;
			void _r;
			const c = classifyLookup(own, reference, parseLookupOverrides(fns.getNodeParameter('statusOverrides', i, '')));
			resolution = c.resolution;
			reason = c.reason;
			response = c.body;
		}
		return {
			item: prepareResolveItem(i, { operationKey, claimToken, resolution, externalRef: resolution === 'happened' ? reference : null, response, reason }),
			options: checkResolveOptions({
				maxChecks: fns.getNodeParameter('maxChecks', i),
				backoffBaseSeconds: fns.getNodeParameter('backoffBaseSeconds', i),
				backoffMaxSeconds: fns.getNodeParameter('backoffMaxSeconds', i),
			}),
		};
	});
	outputs[UNRECORDED].push(...errorItems);
	if (prepared.length === 0) return outputs;
	let results: ResolveResultRow[];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(fns);
		results = await resolveUnknown(pool, schema, prepared.map((p) => p.value.item), prepared[0].value.options, eventContext(fns), bounds);
	} catch (e) {
		outputs[UNRECORDED].push(...batchFailure(fns, e, 'Reconcile Unknown (resolve)', prepared.map((p) => p.index)));
		return outputs;
	}
	for (let k = 0; k < results.length; k++) {
		const r = results[k];
		const p = prepared[k].value.item;
		if (r.result === 'not_found' || r.result === 'busy') {
			const message =
				r.result === 'busy'
					? `Operation key "${cutText(p.operationKey, 200)}" stayed locked by another transaction beyond the lock timeout; nothing was recorded for this item and resolving it again is safe`
					: `No operation exists for key "${cutText(p.operationKey, 200)}"`;
			if (fns.continueOnFail()) {
				outputs[UNRECORDED].push(errorItem(fns, message, r.index, r.result === 'busy'));
				continue;
			}
			throw new NodeOperationError(fns.getNode(), message, { itemIndex: r.index, description: 'The other items of this batch were recorded.' });
		}
		const item = items[r.index];
		// refused_early: the database refused "did not happen" because the claim was made before the
		// operation's settle window ended; it stays unknown and is checked again, so it goes out with
		// the still-unknown items (result tells them apart).
		outputs[resolveOutput(r.result === 'refused_early' ? 'unknown' : r.result)].push({
			json: {
				...item.json,
				reconcile: {
					operationKey: p.operationKey,
					resolution: p.resolution,
					result: r.result,
					status: r.status,
					attempt: r.attempt,
					externalRef: r.externalRef,
					checks: r.checks,
					nextCheckAt: r.nextCheckAt,
					reason:
						r.result === 'refused_early'
							? 'refused early: the lookup was claimed before the operation\'s settle window ended, so "did not happen" cannot be trusted yet; it will be checked again'
							: p.reason,
				},
			},
			binary: item.binary,
			pairedItem: { item: r.index },
		});
	}
	return outputs;
}

export const resolveOperation: NodeOperation = {
	option: {
		name: 'Resolve',
		description: 'Record what the lookup found for each claimed operation',
		action: 'Resolve claimed operations',
	},
	description: resolveProperties,
	execute() {
		return executeResolve(this);
	},
};
