/**
 * The LISTEN/NOTIFY channel of a queue: 'oplq_' and the first 24 hex digits of
 * md5(schema + '/' + queue). Same formula as schema/functions/queue/queue_channel.sql; the result
 * is a plain lower-case identifier (29 bytes), safe to use unquoted in LISTEN.
 */
import { createHash } from 'node:crypto';
import { quoteSchema } from '../db/identifiers';
import { checkQueueName } from './types';

export function queueChannel(schema: string, queue: string): string {
	quoteSchema(schema);
	checkQueueName(queue);
	return 'oplq_' + createHash('md5').update(`${schema}/${queue}`, 'utf8').digest('hex').slice(0, 24);
}
