/**
 * The trigger never fires faster than work can be taken, measured in real time
 * against real Postgres with the node's own trigger(): executions started in 10 s by a consumer
 * that claims nothing, one that fails, one whose groups do not include the due task's group, a
 * healthy one, and the per-minute cap. The figures are printed (docs/queue.md quotes them).
 */
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import { closeAllPools } from '../../../src/db/pool';
import { complete, dequeue, enqueue } from '../../../src/queue';
import { activateTrigger, triggerCredentials, countIn, type ActiveTrigger, type Consumer } from '../../helpers/triggerHarness';
import { queueTestDb, sleep, type QueueTestDb } from '../../helpers/db';

jest.setTimeout(60_000);

let db: QueueTestDb;
const active: ActiveTrigger[] = [];
beforeAll(async () => {
	db = await queueTestDb();
});
afterAll(async () => {
	await Promise.all(active.splice(0).map((t) => t.close()));
	await closeAllPools();
	await db.drop();
});

const WINDOW_MS = 10_000;
const DEFAULT_GROUPS = [
	{ name: 'high', weight: 5 },
	{ name: 'normal', weight: 2 },
	{ name: 'low', weight: 1 },
];

const credentials = (): IDataObject => triggerCredentials(db.schema);

/** The consumer workflow: Dequeue (default groups, batch 1) then Complete. */
const dequeueAndComplete = (queue: string): Consumer => async () => {
	const tasks = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 300, groups: DEFAULT_GROUPS });
	if (tasks.length > 0) await complete(db.pool, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
	return 'success';
};

async function measure(name: string, o: { parameters: IDataObject; consumer: (queue: string) => Consumer; seed: (queue: string) => Promise<void> }) {
	const queue = db.queueName(name);
	await o.seed(queue);
	const start = Date.now();
	const t = await activateTrigger({
		credentials: credentials(),
		parameters: { queue, useListen: true, pollSeconds: 1, maxInFlight: 1, options: {}, ...o.parameters },
		consumer: o.consumer(queue),
	});
	active.push(t);
	await sleep(WINDOW_MS); // real time on purpose: the rate is counted over this window
	const n = countIn(t.executions, start, WINDOW_MS);
	await t.close();
	return { name, executions: n, t };
}

const oneTask = (group: string) => async (queue: string) => {
	await enqueue(db.pool, db.ledgerSchema, [{ queue, group, payload: { one: true } }]);
};

describe('trigger rate (10 s windows, measured concurrently)', () => {
	test('fires only for claimable work, backs off after empty and failed executions, and caps per minute', async () => {
		const results = await Promise.all([
			// Issue 10 item 4: one due task in group "urgent", consumer Dequeue with the default groups.
			measure('other-group', {
				parameters: { mode: 'wakeUp' },
				consumer: dequeueAndComplete,
				seed: oneTask('urgent'),
			}),
			// A consumer that claims nothing (say, it dequeues another queue).
			measure('claims-nothing', {
				parameters: { mode: 'wakeUp' },
				consumer: () => async () => 'success',
				seed: oneTask('high'),
			}),
			// A consumer whose executions fail (wake-up and claim mode).
			measure('fails', {
				parameters: { mode: 'wakeUp' },
				consumer: () => async () => 'error',
				seed: oneTask('high'),
			}),
			measure('claim-fails', {
				parameters: { mode: 'claim', batchSize: 1, leaseSeconds: 1 },
				consumer: () => async () => 'error',
				seed: async (queue) => {
					await db.fill(queue, 'high', 200);
				},
			}),
			// A healthy consumer with 30 tasks: no backoff slows it.
			measure('healthy', {
				parameters: { mode: 'wakeUp' },
				consumer: dequeueAndComplete,
				seed: async (queue) => {
					await db.fill(queue, 'normal', 30);
				},
			}),
			// The cap: a healthy consumer with a backlog, Max Executions per Minute = 5.
			measure('cap-5', {
				parameters: { mode: 'claim', batchSize: 1, leaseSeconds: 60, maxPerMinute: 5 },
				consumer: () => async (items: INodeExecutionData[]) => {
					await complete(db.pool, db.ledgerSchema, items.map((i) => ({ taskId: String(i.json.taskId), leaseToken: String(i.json.leaseToken) })));
					return 'success';
				},
				seed: async (queue) => {
					await db.fill(queue, 'high', 100);
				},
			}),
		]);
		const figures = Object.fromEntries(results.map((r) => [r.name, r.executions]));
		// eslint-disable-next-line no-console
		console.log(`trigger executions in ${WINDOW_MS / 1000} s: ${JSON.stringify(figures)}`);
		expect(figures['other-group']).toBe(0);
		// Backoff 1, 2, 4, 8 s after each empty or failed execution: 4 or 5 starts in 10 s.
		for (const k of ['claims-nothing', 'fails', 'claim-fails']) {
			expect(figures[k]).toBeGreaterThanOrEqual(2);
			expect(figures[k]).toBeLessThanOrEqual(6);
		}
		expect(figures['healthy']).toBe(30);
		expect(figures['cap-5']).toBe(5);
	});
});
