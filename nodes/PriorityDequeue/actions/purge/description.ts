import type { INodeProperties } from 'n8n-workflow';
import { show } from '../common';

export const description: INodeProperties[] = [
	{
		displayName: 'Queue',
		name: 'queue',
		type: 'string',
		default: '',
		description: 'Only this queue. Empty: every queue in the schema.',
		displayOptions: show('purge'),
	},
	{
		displayName: 'Dead Retention (Days)',
		name: 'deadRetentionDays',
		type: 'number',
		typeOptions: { minValue: -1 },
		default: 30,
		description: 'Dead tasks dead for longer than this move to the archive (they can no longer be requeued). -1 keeps them.',
		displayOptions: show('purge'),
	},
	{
		displayName: 'Archive Retention (Days)',
		name: 'archiveRetentionDays',
		type: 'number',
		typeOptions: { minValue: -1 },
		default: 14,
		description: 'Finished tasks (succeeded, and archived dead tasks) older than this are deleted. -1 keeps them.',
		displayOptions: show('purge'),
	},
];
