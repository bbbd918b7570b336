import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { ledgerConnectionTest } from '../shared/connection';
import { failClosedOutputs } from '../shared/outputs';
import { operationProperties } from '../shared/router';
import { operations, router } from './router';
import { OUTPUT_NAMES } from './send.operation';

/** n8n's generic HTTP credentials, each shown for its Authentication choice. */
const targetCredential = (name: string) => ({ name, required: true, displayOptions: { show: { authentication: [name] } } });

export class GuardedHttpRequest implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Guarded HTTP Request',
		name: 'guardedHttpRequest',
		icon: { light: 'file:guardedHttp.svg', dark: 'file:guardedHttp.dark.svg' },
		group: ['output'],
		version: 1,
		subtitle: '={{ $parameter["method"] + " " + ($parameter["url"] || "(no URL yet)") }}',
		description: 'Send an HTTP write at most once per operation key: reserve, send and record in one node, so a retry never sends it again',
		defaults: { name: 'Guarded HTTP Request' },
		inputs: [NodeConnectionTypes.Main],
		// Unrecorded first, then one output per result (nodes/shared/outputs.ts).
		outputs: failClosedOutputs(OUTPUT_NAMES),
		credentials: [
			{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' },
			targetCredential('httpBasicAuth'),
			targetCredential('httpBearerAuth'),
			targetCredential('httpHeaderAuth'),
			targetCredential('httpQueryAuth'),
			targetCredential('oAuth2Api'),
		],
		properties: operationProperties(operations),
	};

	methods = { credentialTest: { ledgerConnectionTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return router.call(this);
	}
}
