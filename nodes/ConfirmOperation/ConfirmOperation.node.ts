import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { failClosedOutputs } from '../shared/outputs';
import { operationProperties } from '../shared/router';
import { operations, router } from './router';
import { OUTPUT_NAMES } from './confirm.operation';

export class ConfirmOperation implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Confirm Operation',
		name: 'confirmOperation',
		icon: { light: 'file:confirm.svg', dark: 'file:confirm.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["outcomeSource"] === "explicit" ? "record " + $parameter["outcome"] : "classify HTTP result" }}',
		description: 'Record the outcome of an outside write (succeeded, failed or unknown), fenced by the lease token',
		defaults: { name: 'Confirm Operation' },
		inputs: [NodeConnectionTypes.Main],
		// Unrecorded first, then one output per result (nodes/shared/outputs.ts).
		outputs: failClosedOutputs(OUTPUT_NAMES),
		credentials: [{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }],
		properties: operationProperties(operations),
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
