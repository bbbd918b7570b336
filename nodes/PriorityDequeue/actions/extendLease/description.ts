import type { INodeProperties } from 'n8n-workflow';
import { show, taskFields } from '../common';

export const description: INodeProperties[] = [
	...taskFields('extendLease'),
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 86400 },
		default: 300,
		description: 'New lease length from now (heartbeat). An already expired lease cannot be extended.',
		displayOptions: show('extendLease'),
	},
];
