/** Priority Dequeue, operation "purge": its entry in the Operation list, its parameters and its execute. */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { asJson, type QueueOperation } from './common';
import { preparePurgeOptions, purge } from '../../src/queue';
import { getLedgerConnection } from '../shared/connection';
import { batchFailure, prepareItems } from '../shared/items';
import { LIMITS } from '../shared/limits';

const DAY = 86_400;
/** Retention in days as the editor shows it: -1 keeps the tasks; the most is the core's bound in seconds, in whole days. */
const RETENTION_DAYS = { minValue: -1, maxValue: Math.floor(LIMITS.purgeRetentionSeconds.max / DAY) };
const DEAD_RETENTION_DAYS = 30;
const ARCHIVE_RETENTION_DAYS = 14;

const description: INodeProperties[] = [
	{
		displayName: 'Queue',
		name: 'queue',
		type: 'string',
		default: '',
		description: 'Only this queue. Empty: every queue in the schema.',
	},
	{
		displayName: 'Dead Retention (Days)',
		name: 'deadRetentionDays',
		type: 'number',
		typeOptions: RETENTION_DAYS,
		default: DEAD_RETENTION_DAYS,
		description: 'Dead tasks dead for longer than this move to the archive (they can no longer be requeued). -1 keeps them.',
	},
	{
		displayName: 'Archive Retention (Days)',
		name: 'archiveRetentionDays',
		type: 'number',
		typeOptions: RETENTION_DAYS,
		default: ARCHIVE_RETENTION_DAYS,
		description: 'Finished tasks (succeeded, and archived dead tasks) older than this are deleted. -1 keeps them.',
	},
];

/** One bounded retention pass per execution (item 0's parameters). */
async function execute(this: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[][]> {
	const { prepared, errorItems } = prepareItems(this, items.slice(0, 1), (i) => {
		const dead = Number(this.getNodeParameter('deadRetentionDays', i, DEAD_RETENTION_DAYS));
		const archive = Number(this.getNodeParameter('archiveRetentionDays', i, ARCHIVE_RETENTION_DAYS));
		return preparePurgeOptions({
			queue: this.getNodeParameter('queue', i, '') as string,
			deadAfterSeconds: dead < 0 ? null : dead * DAY,
			archiveAfterSeconds: archive < 0 ? null : archive * DAY,
		});
	});
	if (prepared.length === 0) return [errorItems];
	try {
		const { pool, schema, bounds } = await getLedgerConnection(this);
		const r = await purge(pool, schema, prepared[0].value, bounds);
		return [[{ json: asJson({ queue: prepared[0].value.queue ?? null, ...r }), pairedItem: { item: 0 } }]];
	} catch (e) {
		return [batchFailure(this, e, 'Purge', [0])];
	}
}

export const purgeOperation: QueueOperation = {
	resource: 'queue',
	option: { name: 'Purge Finished', action: 'Purge finished tasks', description: 'Retention: archive old dead tasks and delete old archived tasks' },
	description,
	execute,
};
