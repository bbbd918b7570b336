/** Operation Ledger Admin, operation "Get": its entry in the Operation list, its parameters and its execute. */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { getOperation } from '../../src/ledger/admin/get';
import { checkOperationKey } from '../../src/ledger/validate';
import { prepareItems, readEach } from '../shared/items';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange } from '../shared/limits';


/** Operation Key: Settle by Hand lists the same object, so it is one parameter shown for both. */
export const operationKeyParameter: INodeProperties = {
		displayName: 'Operation Key',
		name: 'operationKey',
		type: 'string',
		default: '',
		required: true,
		placeholder: 'e.g. payment:charge:order-1001:v1',
		description: 'The business key the operation was reserved with',
};

/** Get's parameters. */
const description: INodeProperties[] = [
	operationKeyParameter,
	{
		displayName: 'Max Events',
		name: 'maxEvents',
		type: 'number',
		typeOptions: numberRange(LIMITS.getMaxEvents),
		default: LIMITS.getMaxEvents.default,
		description: 'Most events to return (the newest; "eventsTotal" says how many exist)',
	},
];

/** One look-up per input item. Returns [Unrecorded, Result]. */
async function executeGet(fns: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = fns.getInputData();
	const { prepared, errorItems } = prepareItems(fns, items, (i) => {
		// Checked here too, so a bad key is an item error before any round trip.
		const key = checkOperationKey(fns.getNodeParameter('operationKey', i));
		const maxEvents = fns.getNodeParameter('maxEvents', i, 500);
		return { key, maxEvents };
	});
	return readEach(fns, 'Operation Ledger Admin (get)', prepared, errorItems, async (conn, p) => {
		const r = await getOperation(conn.pool, conn.schema, p.value.key, p.value.maxEvents, conn.bounds);
		return [
			{
				json: r ? ({ found: true, ...r } as unknown as IDataObject) : { found: false, operationKey: String(p.value.key) },
				pairedItem: { item: p.index },
			},
		];
	});
}

export const getOperationOp: NodeOperation = {
	option: { name: 'Get', description: 'Look one operation up by key, with its event history', action: 'Get an operation' },
	description,
	execute() {
		return executeGet(this);
	},
};
