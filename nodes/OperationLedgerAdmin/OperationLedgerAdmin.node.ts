import {
	NodeConnectionTypes,
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import {
	checkListOptions,
	checkRetentionOptions,
	getOperation,
	ledgerHealth,
	listOperations,
	prepareSettleItem,
	refusalMessage,
	RetentionError,
	runRetention,
	settleByHand,
	type SettleResultRow,
} from '../../src/ledger/admin';
import { checkOperationKey } from '../../src/ledger/validate';
import { getLedgerConnection, ledgerConnectionTest } from '../shared/connection';
import { eventContext } from '../shared/context';
import { batchFailure, errorItem, prepareItems } from '../shared/items';
import { NOT_RECORDED } from '../shared/outputs';
import { adminProperties } from './properties';

/**
 * Fail closed from the first version (as the other nodes' version 2, nodes/shared/outputs.ts):
 * output 0 is Not Recorded, where every item the database did not decide goes (bad input, a
 * missing key, a failed batch, n8n's own empty item of Always Output Data). It must lead to
 * nothing that acts on a decision. Settle by Hand then has Settled (the go-ahead) and Refused; the
 * other operations have Result.
 */
const OUTPUTS_EXPRESSION = `={{ $parameter["operation"] === "settle" ? [
	{ "type": "main", "displayName": "${NOT_RECORDED}" },
	{ "type": "main", "displayName": "Settled" },
	{ "type": "main", "displayName": "Refused" }
] : [{ "type": "main", "displayName": "${NOT_RECORDED}" }, { "type": "main", "displayName": "Result" }] }}`;

// Deliberately not usableAsTool (like every node of the package): settling by hand must be a
// named person's decision and hard delete an explicit choice, not an AI agent's.
export class OperationLedgerAdmin implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Operation Ledger Admin',
		name: 'operationLedgerAdmin',
		icon: { light: 'file:../shared/ledger.svg', dark: 'file:../shared/ledger.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] }}',
		description: 'Look up, list, settle by hand and tidy the operation ledger (for operators)',
		defaults: { name: 'Operation Ledger Admin' },
		inputs: [NodeConnectionTypes.Main],
		outputs: OUTPUTS_EXPRESSION,
		credentials: [{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }],
		properties: adminProperties,
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const operation = this.getNodeParameter('operation', 0) as string;
		switch (operation) {
			case 'get':
				return executeGet(this);
			case 'list':
				return executeList(this);
			case 'settle':
				return executeSettle(this);
			case 'health':
				return executeHealth(this);
			case 'compact':
			case 'hardDelete':
				return executeRetention(this, operation);
			default:
				throw new NodeOperationError(this.getNode(), `Unknown operation "${operation}"`);
		}
	}
}

/** One look-up per input item. Returns [Not Recorded, Result]. */
async function executeGet(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = fns.getInputData();
	const { prepared, errorItems } = prepareItems(fns, items, (i) => {
		// Checked here too, so a bad key is an item error before any round trip.
		const key = checkOperationKey(fns.getNodeParameter('operationKey', i));
		const maxEvents = fns.getNodeParameter('maxEvents', i, 500);
		return { key, maxEvents };
	});
	const failed: INodeExecutionData[] = [...errorItems];
	const out: INodeExecutionData[] = [];
	if (prepared.length === 0) return [failed, out];
	let conn;
	try {
		conn = await getLedgerConnection(fns);
	} catch (e) {
		return [[...failed, ...batchFailure(fns, e, 'Operation Ledger Admin (get)', prepared.map((p) => p.index))], out];
	}
	for (const p of prepared) {
		try {
			const r = await getOperation(conn.pool, conn.schema, p.value.key, p.value.maxEvents, conn.bounds);
			out.push({
				json: r ? ({ found: true, ...r } as unknown as IDataObject) : { found: false, operationKey: String(p.value.key) },
				pairedItem: { item: p.index },
			});
		} catch (e) {
			failed.push(...batchFailure(fns, e, 'Operation Ledger Admin (get)', [p.index]));
		}
	}
	return [failed, out];
}

/** One page per input item (usually one). Returns [Not Recorded, Result]. */
async function executeList(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const input = fns.getInputData();
	const items = input.length ? input : [{ json: {} }];
	const { prepared, errorItems } = prepareItems(fns, items, (i) => ({
		options: checkListOptions({
			kind: fns.getNodeParameter('kind', i),
			minAgeSeconds: fns.getNodeParameter('minAgeSeconds', i, 0),
			target: fns.getNodeParameter('target', i, ''),
			limit: fns.getNodeParameter('limit', i, 50),
			cursor: fns.getNodeParameter('cursor', i, ''),
		}),
		output: fns.getNodeParameter('listOutput', i, 'items') as string,
	}));
	const failed: INodeExecutionData[] = [...errorItems];
	const out: INodeExecutionData[] = [];
	if (prepared.length === 0) return [failed, out];
	let conn;
	try {
		conn = await getLedgerConnection(fns);
	} catch (e) {
		return [[...failed, ...batchFailure(fns, e, 'Operation Ledger Admin (list)', prepared.map((p) => p.index))], out];
	}
	for (const p of prepared) {
		try {
			const page = await listOperations(conn.pool, conn.schema, p.value.options, conn.bounds);
			const pageInfo = { kind: p.value.options.kind, total: page.total, count: page.items.length, nextCursor: page.nextCursor };
			if (p.value.output === 'page') {
				out.push({ json: { ...pageInfo, items: page.items as IDataObject[] }, pairedItem: { item: p.index } });
			} else {
				for (const row of page.items) out.push({ json: { ...(row as IDataObject), page: pageInfo }, pairedItem: { item: p.index } });
			}
		} catch (e) {
			failed.push(...batchFailure(fns, e, 'Operation Ledger Admin (list)', [p.index]));
		}
	}
	return [failed, out];
}

/**
 * Settle by Hand: every item validated first (bad input writes nothing), then one statement for
 * all. Only items the database settled in this call reach "Settled"; refusals go to "Refused"
 * with who decided; bad input, a missing key or a failed batch go to Not Recorded (or throw
 * without continueOnFail), never to Settled. Returns [Not Recorded, Settled, Refused].
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
			const message = `No operation exists for key "${p.operationKey.slice(0, 200)}": nothing was settled`;
			if (fns.continueOnFail()) {
				notRecorded.push(errorItem(message, r.index));
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
			...(r.result === 'refused' ? { refusal: refusalMessage(r), requestedBy: p.decidedBy, requestedDecision: p.decision } : {}),
		};
		(r.result === 'settled' ? settled : refused).push({ json: { ...items[r.index].json, ledger }, pairedItem: { item: r.index } });
	}
	return outputs;
}

/** Once per execution. Returns [Not Recorded, Result]. */
async function executeHealth(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const { prepared, errorItems } = prepareItems(fns, [{ json: {} }], (i) => Number(fns.getNodeParameter('days', i, 7)));
	if (prepared.length === 0) return [errorItems, []];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(fns);
		const h = await ledgerHealth(pool, schema, prepared[0].value, bounds);
		return [[], [{ json: h as unknown as IDataObject, pairedItem: { item: 0 } }]];
	} catch (e) {
		return [batchFailure(fns, e, 'Operation Ledger Admin (health)', [0]), []];
	}
}

/**
 * Compact / Hard Delete: runs once per execution, with the first item's parameters. Returns
 * [Not Recorded, Result]; a failed batch goes to Not Recorded with what earlier batches committed.
 */
async function executeRetention(fns: IExecuteFunctions, operation: 'compact' | 'hardDelete'): Promise<INodeExecutionData[][]> {
	const what = `Operation Ledger Admin (${operation === 'compact' ? 'compact' : 'hard delete'})`;
	const { prepared, errorItems } = prepareItems(fns, [{ json: {} }], (i) =>
		checkRetentionOptions({
			mode: operation === 'compact' ? 'compact' : 'hard_delete',
			acknowledge: operation === 'hardDelete' ? fns.getNodeParameter('acknowledge', i, false) : undefined,
			olderThanDays: fns.getNodeParameter('olderThanDays', i),
			batchSize: fns.getNodeParameter('batchSize', i, 1000),
			maxBatches: fns.getNodeParameter('maxBatches', i, 100),
			maxDurationMs: Math.round(Number(fns.getNodeParameter('maxDurationSeconds', i, 60)) * 1000),
			statementTimeoutMs: fns.getNodeParameter('statementTimeoutMs', i, 30000),
		}),
	);
	if (prepared.length === 0) return [errorItems, []];
	let conn;
	try {
		conn = await getLedgerConnection(fns);
	} catch (e) {
		return [batchFailure(fns, e, what, [0]), []];
	}
	try {
		const report = await runRetention(conn.pool, conn.schema, prepared[0].value, eventContext(fns));
		return [[], [{ json: { ...report, olderThanDays: prepared[0].value.olderThanDays, more: report.stoppedBecause !== 'done' }, pairedItem: { item: 0 } }]];
	} catch (e) {
		const committed = e instanceof RetentionError ? e.report : undefined;
		const message = `${what}: ${(e as Error).message}`;
		if (fns.continueOnFail()) return [[{ json: { error: message, committed: (committed ?? null) as unknown as IDataObject }, pairedItem: { item: 0 } }], []];
		throw new NodeOperationError(fns.getNode(), message, {
			description: 'Batches before the failed one committed (their count is in the message); the failed batch was rolled back. Running again continues where it stopped.',
		});
	}
}
