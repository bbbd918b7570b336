/** Operation Ledger Admin, operation "Health": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { ledgerHealth } from '../../src/ledger/admin/health';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange } from '../shared/limits';


const description: INodeProperties[] = [
	{
		displayName: 'Days of Events',
		name: 'days',
		type: 'number',
		typeOptions: numberRange(LIMITS.healthDays),
		default: LIMITS.healthDays.default,
		description: 'Events per day for this many days (UTC), today included',
	},
];

/** Once per execution. Returns [Unrecorded, Result]. */
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

export const healthOperation: NodeOperation = {
	option: { name: 'Health', description: 'Counts by status, oldest unknown, review backlog, events per day, table sizes, and whether a failover keeps the promise', action: 'Read ledger health' },
	description,
	execute() {
		return executeHealth(this);
	},
};
