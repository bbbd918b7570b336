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
import { queueTestDb, sleep, type QueueTestDb } from '../../helpers/db';
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

describe('Priority Dequeue Trigger: Priority Groups', () => {
	test('Claim Tasks claims only the listed groups', async () => {
		const queue = db.queueName('pg-claim');
		await enqueue(db.pool, db.schema, [
			{ queue, group: 'normal', payload: { n: 'normal' } },
			{ queue, group: 'vip', payload: { n: 'vip' } },
		]);
		const t = await activateTrigger({
			credentials: credentials(),
			parameters: { queue, mode: 'claim', batchSize: 10, leaseSeconds: 60, useListen: false, pollSeconds: 1, maxInFlight: 1, priorityGroups: vipOnly, options: {} },
			consumer: async (items) => {
				await complete(
					db.pool,
					db.schema,
					items.map((i) => ({ taskId: String(i.json.taskId), leaseToken: String(i.json.leaseToken) })),
				);
				return 'success';
			},
		});
		active.push(t);
		await waitFor(() => t.emitted.length > 0, { what: 't.emitted.length > 0', timeoutMs: 10_000 });
		await sleep(1500); // more polls: the normal task must still not be claimed
		expect(t.emitted.flat().map((i) => (i.json.payload as { n: string }).n)).toEqual(['vip']);
		const left = await db.pool.query(`SELECT priority_group AS group, status FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(left.rows).toEqual([{ group: 'normal', status: 'pending' }]);
	});

	test('Wake Up starts an execution only for due work of the listed groups', async () => {
		const queue = db.queueName('pg-wake');
		await enqueue(db.pool, db.schema, [{ queue, group: 'normal', payload: {} }]);
		const t = await activateTrigger({
			credentials: credentials(),
			parameters: { queue, mode: 'wakeUp', useListen: false, pollSeconds: 1, maxInFlight: 1, priorityGroups: vipOnly, options: {} },
			consumer: async () => 'success',
		});
		active.push(t);
		await sleep(2500);
		expect(t.executions).toHaveLength(0);
		await enqueue(db.pool, db.schema, [{ queue, group: 'vip', payload: {} }]);
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
