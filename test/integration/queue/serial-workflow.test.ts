/**
 * workflows/queue-serial-per-customer.json, the example for serial keys: its shape (our nodes at
 * version 1 with parameters the node shows for their operation, the producer's Enqueue wired
 * Unrecorded → Retry Later? and Result → Accepted, the consumer's Dequeue → work → Complete / Fail),
 * and its Priority Dequeue nodes run as saved against Postgres: two orders of one customer and one of
 * another, enqueued as the producer saves them, are claimed by the consumer's Dequeue one customer
 * at a time in arrival order, other customers beside. The real-n8n run is the e2e suite's (not run
 * for this file).
 */
import type { IDataObject, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { closeAllPools } from '../../../src/db/pool';
import { complete } from '../../../src/queue';
import { loadExample, resolveSaved } from '../../helpers/exampleWorkflow';
import { DATABASE_URL, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

const { byName, ours, props, shown, targets, connections } = loadExample('queue-serial-per-customer.json');
const resolve = resolveSaved;

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

describe('workflows/queue-serial-per-customer.json', () => {
	test('its shape: version 1 of our nodes, parameters they show, the serial key is the customer id, outputs wired', () => {
		expect(ours.map((n) => [n.name, n.typeVersion, n.parameters.operation])).toEqual([
			['Enqueue Order', 1, 'enqueue'],
			['Dequeue Orders', 1, 'dequeue'],
			['Complete Order', 1, 'complete'],
			['Fail Order', 1, 'fail'],
		]);
		for (const n of ours) {
			for (const name of Object.keys(n.parameters)) {
				const p = props.filter((x) => x.name === name && shown(x, n.parameters));
				expect([n.name, name, p.length > 0]).toEqual([n.name, name, true]);
			}
		}
		const enq = byName('Enqueue Order');
		expect(enq.parameters.options).toEqual({ serialKey: '={{ $json.customerId }}' });
		expect(enq.parameters.dedupeKey).toBe('={{ $json.orderId }}');
		expect(byName('Dequeue Orders').parameters.queue).toBe(enq.parameters.queue);
		expect(byName('Order Ready').parameters.queue).toBe(enq.parameters.queue);
		// Outputs: Unrecorded first, Result second.
		expect(targets('Enqueue Order')).toEqual([['Retry Later?'], ['Accepted']]);
		expect(targets('Dequeue Orders')).toEqual([[], ['Apply To Account']]);
		expect(targets('Apply To Account')).toEqual([['Complete Order'], ['Fail Order']]);
	});

	test('its Enqueue and Dequeue run as saved: one customer\'s orders one at a time in arrival order, another customer beside', async () => {
		const queue = db.queueName('wf-serial');
		const creds = testCredentials(DATABASE_URL, db.schema);
		const run = async (nodeName: string, items: INodeExecutionData[]) => {
			const n = byName(nodeName);
			const params: Record<string, unknown> = {};
			for (const [k, v] of Object.entries(n.parameters)) params[k] = (i: number) => resolve(v, items[i]);
			params.queue = queue;
			return new PriorityDequeue().execute.call(fakeExecute({ items, params, credentials: creds, continueOnFail: true }));
		};
		// As Validate Order leaves them.
		const orders = [
			{ ok: true, customerId: 'c-1', orderId: 'o-1', amount: 10, action: 'apply' },
			{ ok: true, customerId: 'c-1', orderId: 'o-2', amount: 20, action: 'apply' },
			{ ok: true, customerId: 'c-2', orderId: 'o-3', amount: 30, action: 'apply' },
		];
		const [unrecorded, result] = await run(
			'Enqueue Order',
			orders.map((json) => ({ json })),
		);
		expect(unrecorded).toEqual([]);
		expect(result.map((r) => (r.json as IDataObject).outcome)).toEqual(['enqueued', 'enqueued', 'enqueued']);
		const idOf = (k: number) => String((result[k].json as IDataObject).taskId);
		const claimOnce = async () => {
			const [, claimed] = await run('Dequeue Orders', [{ json: {} }]);
			return claimed.map((c) => c.json as IDataObject);
		};
		const first = await claimOnce();
		expect(first.map((t) => (t.payload as IDataObject).orderId).sort()).toEqual(['o-1', 'o-3']);
		expect(await claimOnce()).toEqual([]);
		await complete(db.pool, db.ledgerSchema, first.map((t) => ({ taskId: String(t.taskId), leaseToken: String(t.leaseToken) })));
		const second = await claimOnce();
		expect(second.map((t) => String(t.taskId))).toEqual([idOf(1)]);
		// A retry of the same order (same dedupe key) finds its task.
		const [, again] = await run('Enqueue Order', [{ json: orders[1] }]);
		expect((again[0].json as IDataObject).outcome).toBe('duplicate');
	});
});
