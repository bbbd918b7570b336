/**
 * Priority Dequeue Trigger reads its groups from the Priority Groups list (the node's own
 * trigger() against real Postgres): in Claim Tasks mode it claims only tasks of the listed groups;
 * in Wake Up mode only due work of the listed groups starts an execution. A malformed list refuses
 * to activate with the list's own error.
 */
import type { IDataObject } from 'n8n-workflow';
import { closeAllPools } from '../../../src/db/pool';
import { complete, enqueue } from '../../../src/queue';
import { activateTrigger, triggerCredentials, type ActiveTrigger } from '../../helpers/triggerHarness';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(60_000);

let db: QueueTestDb;
const active: ActiveTrigger[] = [];
beforeAll(async () => {
	db = await queueTestDb();
});
afterEach(async () => {
	await Promise.all(active.splice(0).map((t) => t.close()));
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const credentials = (): IDataObject => triggerCredentials(db.schema);

const vipOnly = { group: [{ name: 'vip', weight: 3 }] };

/** When a trigger's queue_wake_state query last ended, if after `t` (pg_stat_activity); else null. */
async function wakeCheckEndedAfter(t: Date): Promise<Date | null> {
	const { rows } = await db.pool.query<{ at: Date | null }>(
		`SELECT max(state_change) AS at FROM pg_stat_activity
		  WHERE application_name = 'n8n-nodes-operation-ledger' AND state = 'idle' AND query LIKE '%queue_wake_state%' AND state_change > $1`,
		[t],
	);
	return rows[0].at;
}

describe('Priority Dequeue Trigger: Priority Groups', () => {
	test('Claim Tasks claims only the listed groups', async () => {
		const queue = db.queueName('pg-claim');
		await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'normal', payload: { n: 'normal' } },
			{ queue, group: 'vip', payload: { n: 'vip' } },
		]);
		const t = await activateTrigger({
			credentials: credentials(),
			parameters: { queue, mode: 'claim', batchSize: 10, leaseSeconds: 60, useListen: false, pollSeconds: 1, maxInFlight: 1, priorityGroups: vipOnly, options: {} },
			consumer: async (items) => {
				await complete(
					db.pool,
					db.ledgerSchema,
					items.map((i) => ({ taskId: String(i.json.taskId), leaseToken: String(i.json.leaseToken) })),
				);
				return 'success';
			},
		});
		active.push(t);
		await waitFor(() => t.emitted.length > 0, { what: 'the claim of the vip task', timeoutMs: 10_000 });
		// A later claim (batch of 10) takes the next vip task; it would have taken the normal one
		// too had the trigger claimed that group.
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'vip', payload: { n: 'vip2' } }]);
		await waitFor(() => t.emitted.length > 1, { what: 'the claim of the second vip task', timeoutMs: 10_000 });
		expect(t.emitted.flat().map((i) => (i.json.payload as { n: string }).n)).toEqual(['vip', 'vip2']);
		// The emit is recorded before the consumer's Complete ends: wait until both vip tasks have
		// left the table, then the normal task must still be there, never claimed.
		const rows = async () => (await db.pool.query(`SELECT priority_group AS group, status FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue])).rows;
		await waitFor(async () => (await rows()).every((r) => r.group !== 'vip'), { what: 'the completes of both vip tasks', timeoutMs: 10_000 });
		expect(await rows()).toEqual([{ group: 'normal', status: 'pending' }]);
	});

	test('Wake Up starts an execution only for due work of the listed groups', async () => {
		const queue = db.queueName('pg-wake');
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', payload: {} }]);
		const t = await activateTrigger({
			credentials: credentials(),
			parameters: { queue, mode: 'wakeUp', useListen: false, pollSeconds: 1, maxInFlight: 1, priorityGroups: vipOnly, options: {} },
			consumer: async () => 'success',
		});
		active.push(t);
		// Two checks of the trigger finished (its queue_wake_state query ended, seen from
		// pg_stat_activity) with the normal task due, and neither started an execution.
		const t0 = new Date();
		const first = await waitFor(() => wakeCheckEndedAfter(t0), { what: 'a check of the trigger', timeoutMs: 10_000 });
		await waitFor(() => wakeCheckEndedAfter(first), { what: 'a second check of the trigger', timeoutMs: 10_000 });
		expect(t.executions).toHaveLength(0);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'vip', payload: {} }]);
		await waitFor(() => t.executions.length > 0, { what: 't.executions.length > 0', timeoutMs: 10_000 });
		expect(t.executions.length).toBeGreaterThan(0);
	});

	test('an empty list refuses to activate', async () => {
		await expect(
			activateTrigger({
				credentials: credentials(),
				parameters: { queue: db.queueName('pg-empty'), mode: 'claim', batchSize: 1, leaseSeconds: 60, useListen: false, pollSeconds: 1, maxInFlight: 1, priorityGroups: { group: [] }, options: {} },
				consumer: async () => 'success',
			}),
		).rejects.toThrow(/at least one group/);
	});
});
