import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { operationParameter, operationProperties } from '../shared/router';
import { ADMIN_OUTPUTS } from './outputs';
import { operations, router } from './router';

/**
 * One fixed output list for every operation (./outputs.ts: Unrecorded, Result, Settled, Refused),
 * so switching the Operation never drops a connection. It fails closed like the other nodes
 * (nodes/shared/outputs.ts): output 0 is Unrecorded, where every item the database did not decide
 * goes (bad input, a missing key, a failed batch, n8n's own empty item of Always Output Data). It
 * must lead to nothing that acts on a decision; Settled is the go-ahead.
 */
// Deliberately not usableAsTool (like every node of the package): settling by hand must be a
// named person's decision and hard delete an explicit choice, not an AI agent's.
export class OperationLedgerAdmin implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Operation Ledger Admin',
		name: 'operationLedgerAdmin',
		icon: { light: 'file:admin.svg', dark: 'file:admin.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] }}',
		description: 'Look up, list, settle by hand and tidy the operation ledger (for operators)',
		defaults: { name: 'Operation Ledger Admin' },
		inputs: [NodeConnectionTypes.Main],
		outputs: ADMIN_OUTPUTS,
		credentials: [{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }],
		properties: [operationParameter(operations, 'list'), ...operationProperties(operations)],
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
