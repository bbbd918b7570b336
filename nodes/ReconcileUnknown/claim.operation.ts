/** Reconcile Unknown, operation "Claim": take a batch of due unknown operations to look up. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { checkClaimOptions, claimUnknown } from '../../src/ledger/reconcile/claim';
import { getLedgerConnection } from '../shared/connection';
import { eventContext } from '../shared/context';
import { batchFailure, prepareItems } from '../shared/items';
import { UNRECORDED, emptyOutputs } from '../shared/outputs';
import { OUTPUT_COUNT, TO_CHECK } from './outputs';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange, rangeText } from '../shared/limits';

export const claimProperties: INodeProperties[] = [
	{
		displayName: 'Batch Size',
		name: 'batchSize',
		type: 'number',
		typeOptions: numberRange(LIMITS.reconcileBatchSize),
		default: LIMITS.reconcileBatchSize.default,
		description: `Most operations to claim in one execution (${rangeText(LIMITS.reconcileBatchSize)}), oldest first`,
	},
	{
		displayName: 'Extra Settle Delay (Seconds)',
		name: 'settleSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.reconcileSettleDelaySeconds),
		default: LIMITS.reconcileSettleDelaySeconds.default,
		description:
			`Seconds to wait on top of each operation's own settle window before checking it (${rangeText(LIMITS.reconcileSettleDelaySeconds)}). The window itself belongs to the operation: it is set by Reserve Operation's "Settle Window (Seconds)" and stored when the operation becomes unknown, and the database refuses "did not happen" from a claim made before it ended.`,
	},
	{
		displayName: 'Claim Duration (Seconds)',
		name: 'claimSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.reconcileClaimSeconds),
		default: LIMITS.reconcileClaimSeconds.default,
		description:
			'How long this execution holds the claimed operations, in seconds, so another reconciler does not check them at the same time. The Resolve step must run before it ends.',
	},
	{
		displayName: 'Target',
		name: 'target',
		type: 'string',
		default: '',
		placeholder: 'e.g. payments-api',
		description: 'Only claim operations for this target (as given to Reserve Operation). Empty: all targets.',
	},
];

/** Claims once per execution (with the first item's parameters) and emits one item per operation. */
export async function executeClaim(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const input = fns.getInputData();
	const items = input.length ? input : [{ json: {} }];
	const { prepared, errorItems } = prepareItems(fns, items.slice(0, 1), (i) =>
		checkClaimOptions({
			limit: fns.getNodeParameter('batchSize', i),
			settleSeconds: fns.getNodeParameter('settleSeconds', i, 0),
			claimSeconds: fns.getNodeParameter('claimSeconds', i),
			target: fns.getNodeParameter('target', i, ''),
		}),
	);
	const outputs = emptyOutputs(OUTPUT_COUNT);
	outputs[UNRECORDED].push(...errorItems);
	if (prepared.length === 0) return outputs;
	try {
		const { pool, schema, bounds } = await getLedgerConnection(fns);
		const claimed = await claimUnknown(pool, schema, prepared[0].value, eventContext(fns), bounds);
		outputs[TO_CHECK].push(
			...claimed.map((c) => ({
				json: {
					operationKey: c.operationKey,
					target: c.target,
					idempotencyKey: c.idempotencyKey,
					request: c.request as never,
					attempt: c.attempt,
					reason: c.reason,
					unknownSince: c.unknownSince,
					checks: c.checks,
					reconcile: { operationKey: c.operationKey, claimToken: c.claimToken, claimExpiresAt: c.claimExpiresAt },
				},
				pairedItem: { item: 0 },
			})),
		);
	} catch (e) {
		outputs[UNRECORDED].push(...batchFailure(fns, e, 'Reconcile Unknown (claim)', [0]));
	}
	return outputs;
}

export const claimOperation: NodeOperation = {
	option: {
		name: 'Claim',
		description: 'Take a batch of due unknown operations to look up at the target',
		action: 'Claim unknown operations',
	},
	description: claimProperties,
	execute() {
		return executeClaim(this);
	},
};
