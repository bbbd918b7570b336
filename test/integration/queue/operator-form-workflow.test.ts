/**
 * workflows/queue-operator-form.json, the operator example for Cancel, Pause and Resume: its shape
 * (our nodes at version 1 with parameters the node shows for their operation, the Switch's outputs
 * one per dropdown option of the form, in order, each wired to the node of that action) and each
 * Priority Dequeue node run as saved (its expressions read from a form submission's item) against
 * Postgres. The real-n8n run of a form is the e2e suite's (not run for this file).
 */
import type { INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { closeAllPools } from '../../../src/db/pool';
import { dequeue } from '../../../src/queue';
import { loadExample, resolveSaved } from '../../helpers/exampleWorkflow';
import { DATABASE_URL, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

const { byName, ours, props, shown, targets, connections } = loadExample('queue-operator-form.json');
const resolve = resolveSaved;

/** A form submission item: the field labels as keys, as n8n's Form Trigger emits them. */
const submission = (fields: Record<string, string>): INodeExecutionData => ({ json: { submittedAt: new Date().toISOString(), formMode: 'production', ...fields } });

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb();
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

describe('workflows/queue-operator-form.json', () => {
	test('its shape: version 1 of our nodes, parameters they show, one Switch output per form action wired to that action', () => {
		expect(ours.map((n) => n.typeVersion)).toEqual([1, 1, 1, 1]);
		for (const n of ours) {
			for (const name of Object.keys(n.parameters)) {
				const p = props.filter((x) => x.name === name && shown(x, n.parameters));
				expect([n.name, name, p.length > 0]).toEqual([n.name, name, true]);
			}
		}
		const form = byName('Operator Form');
		const fields = (form.parameters.formFields as { values: { fieldLabel: string; fieldOptions?: { values: { option: string }[] } }[] }).values;
		const actions = (fields.find((f) => f.fieldLabel === 'Action')?.fieldOptions?.values ?? []).map((o) => o.option);
		const rules = (byName('Route by Action').parameters.rules as { values: { outputKey: string }[] }).values.map((r) => r.outputKey);
		expect(rules).toEqual(actions);
		const targets = connections['Route by Action'].main.map((out) => out.map((c) => c.node));
		expect(targets.map((t) => byName(t[0]).parameters.operation)).toEqual(['cancel', 'cancel', 'pause', 'resume']);
		expect(targets.map((t) => byName(t[0]).parameters.cancelBy ?? null)).toEqual(['taskId', 'dedupeKey', null, null]);
		// Every expression names a field the form has.
		const labels = new Set(fields.map((f) => f.fieldLabel));
		for (const n of ours) for (const v of Object.values(n.parameters)) if (typeof v === 'string' && v.startsWith('=')) expect(labels.has(String(resolve(v, submission(Object.fromEntries([...labels].map((l) => [l, l]))))))).toBe(true);
	});

	test('each action node, run as saved on a form submission, does what the operator picked and records the reason and name', async () => {
		const queue = db.queueName('form');
		const [byId, keyed] = await Promise.all([db.fill(queue, 'high', 1), db.fill(queue, 'high', 1, { dedupeKey: 'order-7' })]);
		const run = async (nodeName: string, fields: Record<string, string>) => {
			const item = submission({ Queue: queue, 'Priority Group': '', 'Task ID': '', 'Dedupe Key': '', Reason: 'customer asked', 'Your Name': 'alice', ...fields });
			const n = byName(nodeName);
			const params = Object.fromEntries(Object.entries(n.parameters).map(([k, v]) => [k, resolve(v, item)]));
			const out = await new PriorityDequeue().execute.call(fakeExecute({ items: [item], params, credentials: testCredentials(DATABASE_URL, db.schema) }));
			expect(out[0]).toEqual([]);
			return out[1][0].json;
		};
		expect(await run('Cancel by Task ID', { 'Task ID': byId[0] })).toMatchObject({ taskId: byId[0], outcome: 'cancelled' });
		expect(await run('Cancel by Dedupe Key', { 'Dedupe Key': 'order-7' })).toMatchObject({ taskId: keyed[0], outcome: 'cancelled' });
		const { rows } = await db.pool.query(`SELECT cancel_reason, cancelled_by FROM "${db.schema}".queue_tasks_archive WHERE queue = $1`, [queue]);
		expect(rows).toEqual([
			{ cancel_reason: 'customer asked', cancelled_by: 'alice' },
			{ cancel_reason: 'customer asked', cancelled_by: 'alice' },
		]);
		await db.fill(queue, 'high', 1);
		expect(await run('Pause', { 'Priority Group': 'high' })).toMatchObject({ group: 'high', outcome: 'paused', pausedBy: 'alice', reason: 'customer asked' });
		const groups = [{ name: 'high', weight: 1 }];
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 30, groups })).toEqual([]);
		expect(await run('Resume', { 'Priority Group': 'high' })).toMatchObject({ group: 'high', outcome: 'resumed' });
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 30, groups })).toHaveLength(1);
		expect(await run('Pause', {})).toMatchObject({ group: null, outcome: 'paused' });
		expect(await run('Resume', {})).toMatchObject({ group: null, outcome: 'resumed' });
	});
});
