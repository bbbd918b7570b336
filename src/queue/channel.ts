/**
 * The LISTEN/NOTIFY channel of a queue: 'oplq_' and the first 24 hex digits of
 * md5(schema + '/' + queue). Same formula as schema/functions/queue/queue_channel.sql; the result
 * is a plain lower-case identifier (29 bytes), safe to use unquoted in LISTEN.
 */
import { createHash } from 'node:crypto';
import { schemaSql } from '../db/identifiers';
import { checkQueueName, type LedgerSchema } from './types';

/** `schema`: made by ledgerSchema() (a raw string throws InvalidSchemaNameError); `queue` is checked (InputError). */
export function queueChannel(schema: LedgerSchema, queue: string): string {
	schemaSql(schema);
	checkQueueName(queue);
	return 'oplq_' + createHash('md5').update(`${schema.name}/${queue}`, 'utf8').digest('hex').slice(0, 24);
}
