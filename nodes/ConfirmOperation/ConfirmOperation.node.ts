import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { versionedOutputs } from '../shared/outputs';
import { operationProperties } from '../shared/router';
import { operations, router } from './router';
import { OUTPUT_NAMES } from './confirm.operation';

export class ConfirmOperation implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Confirm Operation',
		name: 'confirmOperation',
		icon: { light: 'file:confirm.svg', dark: 'file:confirm.dark.svg' },
		group: ['transform'],
		version: [1, 2],
		defaultVersion: 2,
		subtitle: '={{ $parameter["outcomeSource"] === "explicit" ? "record " + $parameter["outcome"] : "classify HTTP result" }}',
		description: 'Record the outcome of an outside write (succeeded, failed or unknown), fenced by the lease token',
		defaults: { name: 'Confirm Operation' },
		inputs: [NodeConnectionTypes.Main],
		// Version 2: Unrecorded first (see nodes/shared/outputs.ts); version 1 as it was, its error
		// items on Stale (a result that also records nothing), never on Succeeded.
		outputs: versionedOutputs(OUTPUT_NAMES, OUTPUT_NAMES),
		credentials: [{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }],
		properties: operationProperties(operations),
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
