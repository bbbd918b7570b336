/** Operation Ledger Admin, operation "Settle by Hand": its entry in the Operation list, its parameters and its execute. */
import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData, type INodeProperties } from 'n8n-workflow';
import { prepareSettleItem, refusalMessage, settleByHand, type SettleResultRow } from '../../src/ledger/admin/settle';
import { getLedgerConnection } from '../shared/connection';
import { eventContext } from '../shared/context';
import { batchFailure, errorItem, prepareItems } from '../shared/items';
import { cutText } from '../../src/text';
import type { NodeOperation } from '../shared/router';
import { operationKeyParameter } from './get.operation';


/** Settle by Hand's parameters (Operation Key is Get's, get.operation.ts: one parameter for both). */
const description: INodeProperties[] = [
	operationKeyParameter,
	{
		displayName: 'Decision',
		name: 'decision',
		type: 'options',
		options: [
			{ name: 'Happened', value: 'happened', description: 'The write took effect: record success with its reference; later Reserves answer Done Before' },
			{ name: 'Did Not Happen', value: 'not_happened', description: 'The write did not take effect: record a retryable failure; the next Reserve may proceed' },
		],
		default: 'happened',
	},
	{
		displayName: 'External Reference',
		name: 'externalReference',
		type: 'string',
		default: '',
		description: "The target's ID for the write (required for Happened), e.g. the payment ID",
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		required: true,
		description: 'Why: what the person checked (stored in the event log)',
	},
	{
		displayName: 'Decided By',
		name: 'decidedBy',
		type: 'string',
		default: '',
		required: true,
		placeholder: 'e.g. alice@example.com',
		description: 'The person who decides (stored on the operation and in the event log)',
	},
	{
		displayName: 'Decide Before the Settle Window Ends',
		name: 'beforeSettleWindowEnd',
		type: 'boolean',
		default: false,
		description:
			"Whether to accept Did Not Happen while the operation's settle window still runs (Reserve's Settle Window, from when it went unknown). Off: refused until the window ends, as Reconcile Unknown refuses it, because the write may still land at the target. On: only with evidence that it cannot land; the event log records the override.",
		displayOptions: { show: { decision: ['not_happened'] } },
	},
];

/**
 * Settle by Hand: every item validated first (bad input writes nothing), then one statement for
 * all. Only items the database settled in this call reach "Settled"; refusals go to "Refused"
 * with who decided (or, for Did Not Happen inside the settle window, when it ends); bad input, a missing key or a failed batch go to Unrecorded (or throw
 * without continueOnFail), never to Settled. Returns [Unrecorded, Settled, Refused].
 */
async function executeSettle(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = fns.getInputData();
	const notRecorded: INodeExecutionData[] = [];
	const settled: INodeExecutionData[] = [];
	const refused: INodeExecutionData[] = [];
	const outputs = [notRecorded, settled, refused];
	const { prepared, errorItems } = prepareItems(fns, items, (i) =>
		prepareSettleItem(i, {
			operationKey: fns.getNodeParameter('operationKey', i),
			decision: fns.getNodeParameter('decision', i),
			externalRef: fns.getNodeParameter('externalReference', i, ''),
			reason: fns.getNodeParameter('reason', i, ''),
			decidedBy: fns.getNodeParameter('decidedBy', i, ''),
			beforeSettleWindowEnd: fns.getNodeParameter('decision', i) === 'not_happened' && fns.getNodeParameter('beforeSettleWindowEnd', i, false) === true,
		}),
	);
	notRecorded.push(...errorItems);
	if (prepared.length === 0) return outputs;
	let results: SettleResultRow[];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(fns);
		results = await settleByHand(pool, schema, prepared.map((p) => p.value), eventContext(fns), bounds);
	} catch (e) {
		notRecorded.push(...batchFailure(fns, e, 'Operation Ledger Admin (settle by hand)', prepared.map((p) => p.index)));
		return outputs;
	}
	for (let k = 0; k < results.length; k++) {
		const r = results[k];
		const p = prepared[k].value;
		if (r.result === 'not_found') {
			const message = `No operation exists for key "${cutText(p.operationKey, 200)}": nothing was settled`;
			if (fns.continueOnFail()) {
				notRecorded.push(errorItem(fns, message, r.index));
				continue;
			}
			throw new NodeOperationError(fns.getNode(), message, { itemIndex: r.index, description: 'The other items of this batch were recorded.' });
		}
		const ledger = {
			operationKey: p.operationKey,
			result: r.result,
			decision: r.decision,
			status: r.status,
			attempt: r.attempt,
			externalRef: r.externalRef,
			retryable: r.retryable,
			decidedBy: r.decidedBy,
			decidedAt: r.decidedAt,
			...(r.result === 'refused_early' ? { settleUntil: r.settleUntil } : {}),
			...(r.result !== 'settled' ? { refusal: refusalMessage(r), requestedBy: p.decidedBy, requestedDecision: p.decision } : {}),
		};
		(r.result === 'settled' ? settled : refused).push({ json: { ...items[r.index].json, ledger }, pairedItem: { item: r.index } });
	}
	return outputs;
}

export const settleOperation: NodeOperation = {
	option: { name: 'Settle by Hand', description: 'A named person decides whether an unknown or review operation happened', action: 'Settle an operation by hand' },
	description,
	execute() {
		return executeSettle(this);
	},
};
