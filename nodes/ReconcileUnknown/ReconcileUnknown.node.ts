import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { operationParameter, operationProperties } from '../shared/router';
import { RECONCILE_OUTPUTS } from './outputs';
import { operations, router } from './router';

/**
 * One fixed output list for Claim and Resolve (./outputs.ts), so switching the Operation never
 * drops a connection. Unrecorded comes first (nodes/shared/outputs.ts), so that nothing n8n makes
 * up and no error item reaches To Check, Succeeded (happened) or Failed (did not happen).
 */
export class ReconcileUnknown implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Reconcile Unknown',
		name: 'reconcileUnknown',
		icon: { light: 'file:reconcile.svg', dark: 'file:reconcile.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] === "resolve" ? "Resolve" : "Claim" }}',
		description: 'Settle operations whose outcome is unknown by asking the target system, never by guessing',
		defaults: { name: 'Reconcile Unknown' },
		inputs: [NodeConnectionTypes.Main],
		outputs: RECONCILE_OUTPUTS,
		credentials: [{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }],
		properties: [
			operationParameter(operations, 'claim'),
			...operationProperties(operations),
		],
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
