import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { failClosedOutputs } from '../shared/outputs';
import { operationProperties } from '../shared/router';
import { operations, router } from './router';
import { OUTPUT_NAMES } from './reserve.operation';

export class ReserveOperation implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Reserve Operation',
		name: 'reserveOperation',
		icon: { light: 'file:reserve.svg', dark: 'file:reserve.dark.svg' },
		group: ['transform'],
		version: 1,
		// A fresh node has no resource or action yet: say what is missing rather than show ":".
		subtitle:
			'={{ $parameter["keyMode"] === "custom" ? "custom key" : ($parameter["resource"] && $parameter["action"] ? $parameter["resource"] + ":" + $parameter["action"] : "set the operation key") }}',
		description: 'Reserve a business operation key before an outside write, so retries never repeat it',
		defaults: { name: 'Reserve Operation' },
		inputs: [NodeConnectionTypes.Main],
		// Unrecorded first, then one output per outcome (nodes/shared/outputs.ts).
		outputs: failClosedOutputs(OUTPUT_NAMES),
		credentials: [{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }],
		properties: operationProperties(operations),
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
