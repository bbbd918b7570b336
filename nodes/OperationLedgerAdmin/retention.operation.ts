/** Operation Ledger Admin, operations "Compact" and "Hard Delete": one retention pass, two modes. */
import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData, type INodeProperties } from 'n8n-workflow';
import { checkRetentionOptions, RetentionError, runRetention } from '../../src/ledger/admin/retention';
import { getLedgerConnection } from '../shared/connection';
import { eventContext } from '../shared/context';
import { batchFailure, errorJson, prepareItems } from '../shared/items';
import { toCoreError } from '../../src/db/driverError';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange } from '../shared/limits';


/** Hard Delete's acknowledgement. */
const acknowledge: INodeProperties = {
	displayName: 'I Understand a Deleted Key That Is Retried Runs Its Write Again',
	name: 'acknowledge',
	type: 'boolean',
	default: false,
	description:
		'Whether to really delete. Hard delete removes the operation and its events: the ledger forgets the key, so a very late retry of it is a new operation and sends the write again. Compact keeps the promise; prefer it.',
};

/** The fields both modes share: one parameter each, shown for Compact and Hard Delete. */
const shared: INodeProperties[] = [
	{
		displayName: 'Settled More Than (Days)',
		name: 'olderThanDays',
		type: 'number',
		typeOptions: numberRange(LIMITS.retentionOlderThanDays),
		default: LIMITS.retentionOlderThanDays.default,
		description: 'Only operations settled (succeeded or failed) more than this many days ago. Unknown, review and reserved operations are never touched.',
	},
	{
		displayName: 'Batch Size',
		name: 'batchSize',
		type: 'number',
		typeOptions: numberRange(LIMITS.retentionBatchSize),
		default: LIMITS.retentionBatchSize.default,
		description: 'Operations per batch; each batch is one short transaction that skips rows a workflow holds',
	},
	{
		displayName: 'Max Batches',
		name: 'maxBatches',
		type: 'number',
		typeOptions: numberRange(LIMITS.retentionMaxBatches),
		default: LIMITS.retentionMaxBatches.default,
		description: 'Stop after this many batches; the next run continues',
	},
	{
		displayName: 'Max Duration (Seconds)',
		name: 'maxDurationSeconds',
		type: 'number',
		typeOptions: { minValue: LIMITS.retentionMaxDurationMs.min / 1000, maxValue: LIMITS.retentionMaxDurationMs.max / 1000 },
		default: LIMITS.retentionMaxDurationMs.default / 1000,
		description: 'Start no new batch after this many seconds; the next run continues',
	},
	{
		displayName: 'Statement Timeout (Ms)',
		name: 'statementTimeoutMs',
		type: 'number',
		typeOptions: numberRange(LIMITS.retentionStatementTimeoutMs),
		default: LIMITS.retentionStatementTimeoutMs.default,
		description: 'Statement and lock timeout of each batch, in milliseconds; a batch that exceeds it is rolled back',
	},
];

/**
 * Compact / Hard Delete: runs once per execution, with the first item's parameters. Returns
 * [Unrecorded, Result]; a failed batch goes to Unrecorded with what earlier batches committed.
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
		if (fns.continueOnFail())
			return [[{ json: { ...errorJson(fns, message, toCoreError(e).retryable), committed: (committed ?? null) as unknown as IDataObject }, pairedItem: { item: 0 } }], []];
		throw new NodeOperationError(fns.getNode(), message, {
			description:
				e instanceof RetentionError && e.outcomeUnknown
					? 'Batches before the failed one committed (their count is in the message); the connection was lost while the failed batch was committing, so it may have committed too. Running again is safe and continues where it stopped.'
					: 'Batches before the failed one committed (their count is in the message); the failed batch was rolled back. Running again continues where it stopped.',
		});
	}
}

export const hardDeleteOperation: NodeOperation = {
	option: { name: 'Hard Delete', description: 'Forget long-settled operations entirely: a retry of a deleted key runs its write again', action: 'Hard delete settled operations' },
	description: [acknowledge, ...shared],
	execute() {
		return executeRetention(this, 'hardDelete');
	},
};

/** Compact shows the same fields as Hard Delete (the same objects, so one parameter), without the acknowledgement. */
export const compactOperation: NodeOperation = {
	option: { name: 'Compact', description: 'Drop bodies and old events of long-settled operations, keeping what answers a late retry', action: 'Compact settled operations' },
	description: shared,
	execute() {
		return executeRetention(this, 'compact');
	},
};
