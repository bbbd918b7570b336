/**
 * The operation key's parameters and their reading, shared by Reserve Operation and Guarded HTTP
 * Request: *Build From Parts* (resource:action:entity:version) or *Custom Key*. The rule for a key
 * is the core's (src/ledger/validate.ts: checkOperationKey, buildOperationKey).
 */
import type { IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { buildOperationKey } from '../../src/ledger/validate';

/** The parameters, in panel order. */
export const operationKeyProperties: INodeProperties[] = [
	{
		displayName: 'Operation Key',
		name: 'keyMode',
		type: 'options',
		options: [
			{
				name: 'Build From Parts',
				value: 'parts',
				description: 'Resource:action:entity:version, e.g. payment:charge:order-1001:v1',
			},
			{ name: 'Custom Key', value: 'custom', description: 'Any key up to 512 bytes' },
		],
		default: 'parts',
		description: 'The business intent this write carries out. The same intent must always give the same key; never use the execution ID.',
	},
	{
		displayName: 'Resource',
		name: 'resource',
		type: 'string',
		default: '',
		placeholder: 'e.g. payment',
		required: true,
		description: 'What kind of thing the write creates or changes, e.g. payment, invoice, email',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Action',
		name: 'action',
		type: 'string',
		default: '',
		placeholder: 'e.g. charge',
		required: true,
		description: 'What the write does, e.g. charge, create, send',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Entity',
		name: 'entity',
		type: 'string',
		default: '',
		placeholder: 'e.g. {{ $json.orderId }}',
		required: true,
		description: 'The business identity the write is for, e.g. an order or customer ID',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Version',
		name: 'version',
		type: 'string',
		default: 'v1',
		description: 'Bump it when the same entity may legitimately get the write again (e.g. a second invoice run)',
		displayOptions: { show: { keyMode: ['parts'] } },
	},
	{
		displayName: 'Custom Key',
		name: 'operationKey',
		type: 'string',
		default: '',
		placeholder: 'e.g. invoice:create:{{ $json.customerId }}:v3',
		required: true,
		description: 'The operation key: 1 to 512 bytes, no control characters, no leading or trailing spaces',
		displayOptions: { show: { keyMode: ['custom'] } },
	},
];

/**
 * Item `i`'s operation key as the parameters give it, unchecked for Custom Key (the core's
 * prepare function checks it) and built with buildOperationKey for parts.
 * @throws InputError for a bad part (empty, contains ":", white space at an end).
 */
export function operationKeyParameter(fns: IExecuteFunctions, i: number): unknown {
	const keyMode = fns.getNodeParameter('keyMode', i) as string;
	return keyMode === 'custom'
		? fns.getNodeParameter('operationKey', i)
		: buildOperationKey({
				resource: fns.getNodeParameter('resource', i),
				action: fns.getNodeParameter('action', i),
				entity: fns.getNodeParameter('entity', i),
				version: fns.getNodeParameter('version', i),
			});
}
