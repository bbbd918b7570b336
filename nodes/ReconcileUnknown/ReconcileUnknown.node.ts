import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { FAIL_CLOSED_VERSION, NOT_RECORDED } from '../shared/outputs';
import { CLAIM_OUTPUT_LABEL, RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS, outputLabels } from '../../src/ledger/states';
import { operationParameter, operationProperties } from '../shared/router';
import { operations, router } from './router';

/**
 * Outputs per operation and node version: Claim has To Check; Resolve has one per result. Version 2
 * puts Not Recorded first (see nodes/shared/outputs.ts), so that nothing n8n makes up or an error
 * item reaches To Check, Succeeded (happened) or Did Not Happen.
 */
const output = (label: string) => `{ "type": "main", "displayName": ${JSON.stringify(label)} }`;
const RESOLVE_NAMES = outputLabels(RESOLVE_OUTPUTS, RESOLVE_OUTPUT_LABELS).map(output).join(', ');
const OUTPUTS_EXPRESSION: `={{${string}}}` = `={{ ($nodeVersion >= ${FAIL_CLOSED_VERSION} ? [${output(NOT_RECORDED)}] : []).concat($parameter["operation"] === "resolve" ? [${RESOLVE_NAMES}] : [${output(CLAIM_OUTPUT_LABEL)}]) }}`;

export class ReconcileUnknown implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Reconcile Unknown',
		name: 'reconcileUnknown',
		icon: { light: 'file:reconcile.svg', dark: 'file:reconcile.dark.svg' },
		group: ['transform'],
		version: [1, 2],
		defaultVersion: 2,
		subtitle: '={{ $parameter["operation"] === "resolve" ? "Resolve" : "Claim" }}',
		description: 'Settle operations whose outcome is unknown by asking the target system, never by guessing',
		defaults: { name: 'Reconcile Unknown' },
		inputs: [NodeConnectionTypes.Main],
		outputs: OUTPUTS_EXPRESSION,
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
