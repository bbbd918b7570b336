/**
 * Issue 24 in a real n8n 2.33.7: no recovery path n8n offers sends one operation's write twice.
 *
 * The target is a real loopback HTTP server that does NOT honour Idempotency-Key
 * (test/helpers/fakeTarget.ts): every write it receives is committed as a new one, so its count of
 * committed writes is the truth. The package is packed and installed as the Community Nodes UI
 * installs it; the operator's tools are driven through n8n's own REST API exactly as the editor
 * calls it (test/helpers/n8nRest.ts): "Execute workflow" and "Execute step" (POST
 * /rest/workflows/:id/run with triggerToStartFrom, or runData + destinationNode + dirtyNodeNames),
 * pinned data (saved with the workflow, PATCH /rest/workflows/:id), "Retry with currently saved
 * workflow" and "with original workflow" (POST /rest/executions/:id/retry, loadWorkflow true and
 * false; both start again at the node with the error), the test webhook URL, a resent production
 * webhook, a Wait node's form resumed twice at once.
 *
 * The examples that write (workflows/idempotent-payment.json, agent-policy-ledger.json,
 * agent-approval.json) each go through every path that applies to them; each path ends with
 * exactly one committed write per operation. To make n8n offer Retry, an execution must fail at
 * the write: the test holds the operation's ledger row locked while the target answers, so the
 * write node cannot record the answer within the credential's Lock Timeout (1 s) and stops the
 * workflow; the retry then meets the reservation and sends nothing.
 *
 * Two controls show why: Reserve → a separate HTTP Request node left at On Error: Stop → Confirm
 * (the issue's setup) is sent twice by a Retry (the target commits twice) and Confirm now sends
 * that second write To Review as a possible duplicate instead of Succeeded; the same with the
 * HTTP node at On Error: Continue (using error output) into Confirm never fails at the write, so
 * there is nothing for Retry to re-send. And Reserve's default fingerprint after a Webhook: the same
 * body again with other headers, query or through the test URL answers Done Before, another amount
 * Conflict.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startFakeOpenAi, type FakeOpenAi } from '../helpers/fakeOpenAi';
import { startFakeTarget, type FakeTarget } from '../helpers/fakeTarget';
import { harness, type Json, type N8nInstance } from '../helpers/n8nHarness';
import { waitFor } from '../helpers/wait';
import { ownerSession, outputsOf, takenOf, type Execution, type N8nRest } from '../helpers/n8nRest';

const ROOT = path.resolve(__dirname, '../..');
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const PKG = 'n8n-nodes-operation-ledger';
/** The type version of Reserve and Confirm in the workflows this test builds. */
const LEDGER_VERSION = 1;
/** Guarded HTTP Request's outputs. */
const G = { unrecorded: 0, succeeded: 1, failed: 2, unknown: 3, doneBefore: 4, inProgress: 5, reconcile: 6, conflict: 7, failedBefore: 8, review: 9 };
/** Reserve's outputs (Unrecorded first). */
const R = { unrecorded: 0, proceed: 1, doneBefore: 2, inProgress: 3, reconcile: 4, conflict: 5, failedBefore: 6 };
/** Confirm's outputs (Unrecorded first). */
const C = { unrecorded: 0, succeeded: 1, failed: 2, unknown: 3, stale: 4, review: 5 };
const MANUAL_TRIGGER = 'When clicking ‘Execute workflow’';
const CRED = { operationLedgerPostgresApi: { id: 'ledger-pg', name: 'Operation Ledger Postgres account' } };

const log = (m: string) => process.stdout.write(`[recovery] ${m}\n`);
const readWorkflow = (file: string): Json => JSON.parse(readFileSync(path.join(ROOT, 'workflows', file), 'utf8'));
const byName = (wf: Json, name: string): Json => {
	const n = wf.nodes.find((x: Json) => x.name === name);
	if (!n) throw new Error(`${wf.id} has no node "${name}"`);
	return n;
};
const noOp = (name: string, position: number[]) => ({ id: randomUUID(), name, type: 'n8n-nodes-base.noOp', typeVersion: 1, position, parameters: {} });
const to = (...names: Array<string | null>) => names.map((n) => (n ? [{ node: n, type: 'main', index: 0 }] : []));

function renameNode(wf: Json, from: string, toName: string) {
	byName(wf, from).name = toName;
	if (wf.connections[from]) {
		wf.connections[toName] = wf.connections[from];
		delete wf.connections[from];
	}
	for (const src of Object.values<Json>(wf.connections)) for (const outs of src.main ?? []) for (const c of outs ?? []) if (c.node === from) c.node = toName;
}

/** The shipped payment example, its URL pointed at the target. */
function paymentWorkflow(targetUrl: string): Json {
	const wf = readWorkflow('idempotent-payment.json');
	const charge = byName(wf, 'Charge Payment');
	expect(charge.type).toBe(`${PKG}.guardedHttpRequest`);
	charge.parameters.url = `${targetUrl}/payments`;
	return wf;
}

/** The payment example behind a production Webhook (POST /webhook/rp-pay), reading the order from the body. */
function paymentWebhookWorkflow(targetUrl: string): Json {
	const wf = paymentWorkflow(targetUrl);
	wf.id = 'payment-webhook';
	wf.name = 'Recovery: payment webhook';
	const trigger = byName(wf, MANUAL_TRIGGER);
	renameNode(wf, MANUAL_TRIGGER, 'Payment Request');
	Object.assign(trigger, { type: 'n8n-nodes-base.webhook', typeVersion: 2, webhookId: randomUUID(), parameters: { httpMethod: 'POST', path: 'rp-pay', responseMode: 'onReceived', options: {} } });
	for (const a of byName(wf, 'Business Input').parameters.assignments.assignments) a.value = `={{ $json.body.${a.name} }}`;
	return wf;
}

/**
 * The payment webhook whose Charge Payment sends with one of n8n's own credentials (Header Auth),
 * at POST /webhook/rp-auth.
 */
function paymentAuthWorkflow(targetUrl: string): Json {
	const wf = paymentWebhookWorkflow(targetUrl);
	wf.id = 'payment-auth';
	wf.name = 'Recovery: payment with an n8n credential';
	const trigger = byName(wf, 'Payment Request');
	trigger.webhookId = randomUUID();
	trigger.parameters.path = 'rp-auth';
	const charge = byName(wf, 'Charge Payment');
	charge.parameters.authentication = 'httpHeaderAuth';
	charge.credentials = { ...charge.credentials, httpHeaderAuth: { id: 'target-header', name: 'Target API key' } };
	return wf;
}

/**
 * The payment behind a second step: Webhook → answer with the Wait node's resume URL → Wait
 * (resumed by a POST to that URL) → Business Input → Charge Payment.
 */
function paymentWaitWorkflow(targetUrl: string): Json {
	const wf = paymentWebhookWorkflow(targetUrl);
	wf.id = 'payment-wait';
	wf.name = 'Recovery: payment after a Wait';
	const trigger = byName(wf, 'Payment Request');
	trigger.webhookId = randomUUID();
	trigger.parameters = { httpMethod: 'POST', path: 'rp-wait', responseMode: 'responseNode', options: {} };
	for (const a of byName(wf, 'Business Input').parameters.assignments.assignments) a.value = `={{ $('Payment Request').item.json.body.${a.name} }}`;
	wf.nodes.push(
		{ id: randomUUID(), name: 'Send Resume Link', type: 'n8n-nodes-base.respondToWebhook', typeVersion: 1.1, position: [-300, 300], parameters: { respondWith: 'json', responseBody: '={{ { resumeUrl: $execution.resumeUrl } }}', options: {} } },
		{ id: randomUUID(), name: 'Wait for Go', type: 'n8n-nodes-base.wait', typeVersion: 1.1, position: [-200, 300], webhookId: randomUUID(), parameters: { resume: 'webhook', httpMethod: 'POST', options: {} } },
	);
	wf.connections['Payment Request'] = { main: to('Send Resume Link') };
	wf.connections['Send Resume Link'] = { main: to('Wait for Go') };
	wf.connections['Wait for Go'] = { main: to('Business Input') };
	return wf;
}

/**
 * Reserve with its defaults straight after a Webhook (POST /webhook/rp-reserve): the key from the
 * body's orderId, Request left at "From the Input Item"; Proceed → Confirm (recorded succeeded).
 */
function reserveWebhookWorkflow(): Json {
	return {
		id: 'reserve-webhook',
		name: 'Recovery: Reserve after a Webhook',
		settings: { executionOrder: 'v1' },
		nodes: [
			{ id: randomUUID(), name: 'Order', type: 'n8n-nodes-base.webhook', typeVersion: 2, webhookId: randomUUID(), position: [0, 0], parameters: { httpMethod: 'POST', path: 'rp-reserve', responseMode: 'onReceived', options: {} } },
			{
				id: randomUUID(),
				name: 'Reserve Operation',
				type: `${PKG}.reserveOperation`,
				typeVersion: LEDGER_VERSION,
				position: [250, 0],
				parameters: { keyMode: 'parts', resource: 'order', action: 'pay', entity: '={{ $json.body.orderId }}', version: 'v1', target: 'payments-api', leaseSeconds: 300 },
				credentials: CRED,
			},
			{
				id: randomUUID(),
				name: 'Record Payment',
				type: `${PKG}.confirmOperation`,
				typeVersion: LEDGER_VERSION,
				position: [500, -100],
				parameters: { outcomeSource: 'explicit', outcome: 'succeeded', externalReference: '={{ "ref-" + $json.body.orderId }}', lineage: 'auto', options: {} },
				credentials: CRED,
			},
			...['Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'].map((n, i) => noOp(n, [500, 100 + i * 120])),
		],
		connections: {
			Order: { main: to('Reserve Operation') },
			'Reserve Operation': { main: to(null, 'Record Payment', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before') },
		},
	};
}

/**
 * The issue's setup: Webhook → Business Input → Reserve → a separate HTTP Request node → Confirm,
 * the HTTP node at On Error `onError` (undefined: n8n's default, Stop Workflow). With
 * continueErrorOutput both of its outputs go to Confirm.
 */
function separateWriteWorkflow(targetUrl: string, id: string, webhookPath: string, onError?: string): Json {
	const http: Json = {
		id: randomUUID(),
		name: 'Charge',
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		position: [500, 0],
		parameters: {
			method: 'POST',
			url: `${targetUrl}/payments`,
			sendHeaders: true,
			headerParameters: { parameters: [{ name: 'Idempotency-Key', value: '={{ $json.ledger.idempotencyKey }}' }] },
			sendBody: true,
			contentType: 'json',
			specifyBody: 'json',
			jsonBody: '={{ JSON.stringify({ orderId: $json.orderId, amount: $json.amount }) }}',
			options: { timeout: 5000 },
		},
	};
	if (onError) http.onError = onError;
	return {
		id,
		name: `Recovery: ${id}`,
		settings: { executionOrder: 'v1' },
		nodes: [
			{ id: randomUUID(), name: 'Payment Request', type: 'n8n-nodes-base.webhook', typeVersion: 2, webhookId: randomUUID(), position: [0, 0], parameters: { httpMethod: 'POST', path: webhookPath, responseMode: 'onReceived', options: {} } },
			{
				id: randomUUID(),
				name: 'Business Input',
				type: 'n8n-nodes-base.set',
				typeVersion: 3.4,
				position: [150, 0],
				parameters: {
					mode: 'manual',
					assignments: {
						assignments: [
							{ id: randomUUID(), name: 'orderId', value: '={{ $json.body.orderId }}', type: 'string' },
							{ id: randomUUID(), name: 'amount', value: '={{ $json.body.amount }}', type: 'number' },
						],
					},
					includeOtherFields: false,
					options: {},
				},
			},
			{
				id: randomUUID(),
				name: 'Reserve Operation',
				type: `${PKG}.reserveOperation`,
				typeVersion: LEDGER_VERSION,
				position: [300, 0],
				parameters: { keyMode: 'parts', resource: 'payment', action: 'charge', entity: '={{ $json.orderId }}', version: 'v1', target: 'payments-api', leaseSeconds: 300 },
				credentials: CRED,
			},
			http,
			{
				id: randomUUID(),
				name: 'Confirm Operation',
				type: `${PKG}.confirmOperation`,
				typeVersion: LEDGER_VERSION,
				position: [700, 0],
				parameters: { outcomeSource: 'httpResult', externalReference: '={{ $json.id ?? $json.body?.id }}', lineage: 'auto', options: {} },
				credentials: CRED,
			},
			...['Paid', 'Payment Failed', 'Outcome Unknown', 'Stale', 'Possible Duplicate'].map((n, i) => noOp(n, [950, -200 + i * 120])),
		],
		connections: {
			'Payment Request': { main: to('Business Input') },
			'Business Input': { main: to('Reserve Operation') },
			'Reserve Operation': { main: to(null, 'Charge') },
			Charge: { main: onError === 'continueErrorOutput' ? to('Confirm Operation', 'Confirm Operation') : to('Confirm Operation') },
			'Confirm Operation': { main: to(null, 'Paid', 'Payment Failed', 'Outcome Unknown', 'Stale', 'Possible Duplicate') },
		},
	};
}

/** The agent examples, their outside URLs pointed at the target. */
function agentWorkflows(targetUrl: string): Json[] {
	const main = readWorkflow('agent-policy-ledger.json');
	const approval = readWorkflow('agent-approval.json');
	for (const wf of [main, approval]) {
		const issue = byName(wf, 'Issue Refund');
		expect(issue.type).toBe(`${PKG}.guardedHttpRequest`);
		issue.parameters.url = `${targetUrl}/refunds`;
	}
	byName(approval, 'Notify Approver').parameters.url = `${targetUrl}/notifications`;
	return [approval, main];
}

describe('recovery paths in a real n8n: every write once', () => {
	let n8n: N8nInstance;
	let rest: N8nRest;
	let target: FakeTarget;
	let model: FakeOpenAi;
	let pg: Client;
	let n8nDb: Client;
	const schema = `recovery_${randomBytes(5).toString('hex')}`;
	const tag = randomBytes(3).toString('hex');
	const order = (name: string) => `${name}-${tag}`;

	beforeAll(async () => {
		target = await startFakeTarget();
		model = await startFakeOpenAi();
		pg = new Client({ connectionString: DATABASE_URL });
		await pg.connect();
		const tarball = await harness.packPackage();
		n8n = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, tarball });
		await n8n.importCredentials([
			{
				id: 'ledger-pg',
				name: 'Operation Ledger Postgres account',
				type: 'operationLedgerPostgresApi',
				// Lock Timeout 1 s: a row the test holds locked makes the write node fail within it.
				data: { connectionType: 'connectionString', connectionString: DATABASE_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 5, lockTimeoutMs: 1000 },
			},
			{ id: 'openai-api', name: 'OpenAI', type: 'openAiApi', data: { apiKey: 'sk-fake-test-key', url: model.baseUrl, header: false } },
			{ id: 'target-header', name: 'Target API key', type: 'httpHeaderAuth', data: { name: 'X-Api-Key', value: 'target-secret-1' } },
		]);
		await n8n.importWorkflow([
			paymentWorkflow(target.url),
			paymentWebhookWorkflow(target.url),
			paymentWaitWorkflow(target.url),
			paymentAuthWorkflow(target.url),
			reserveWebhookWorkflow(),
			separateWriteWorkflow(target.url, 'separate-write', 'rp-separate'),
			separateWriteWorkflow(target.url, 'separate-write-continue', 'rp-separate-continue', 'continueErrorOutput'),
			...agentWorkflows(target.url),
		]);
		for (const id of ['payment-webhook', 'payment-wait', 'payment-auth', 'reserve-webhook', 'separate-write', 'separate-write-continue', 'agent-approval', 'agent-policy-ledger']) await n8n.publishWorkflow(id);
		await n8n.start();
		await n8n.waitForWebhooks([{ path: 'rp-pay' }, { path: 'rp-wait' }, { path: 'rp-auth' }, { path: 'rp-reserve' }, { path: 'rp-separate' }, { path: 'rp-separate-continue' }, { path: 'agent-refund' }]);
		rest = await ownerSession(n8n.url);
		n8nDb = new Client({ connectionString: n8n.database.url });
		await n8nDb.connect();
		log(`n8n at ${n8n.url}, target at ${target.url}, ledger schema ${schema} (log: ${n8n.logFile})`);
	}, 15 * 60_000);

	afterAll(async () => {
		for (const c of heldLocks) await c.end().catch(() => undefined);
		await n8nDb?.end().catch(() => undefined);
		await n8n?.cleanup().catch(() => undefined);
		await pg?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
		await pg?.end().catch(() => undefined);
		await target?.close();
		await model?.close();
	}, 5 * 60_000);

	// --- helpers ---

	/** The payment examples send the order's customer (cus_<order>); the separate-node workflows send the order id. */
	const writesOf = (orderId: string) => target.writes().filter((w) => (w.body as Json)?.customerId === `cus_${orderId}` || (w.body as Json)?.orderId === orderId);
	const row = async (key: string) => (await pg.query(`SELECT status, attempt, external_ref, possible_duplicate_at FROM "${schema}".operations WHERE operation_key = $1`, [key])).rows[0];

	/** Lock holders not let go yet (a failed case's; afterAll ends them before dropping the schema). */
	const heldLocks = new Set<Client>();
	/**
	 * Holds the ledger row of `key` locked from another session once the target committed the next
	 * write, so the node cannot record the answer; `release()` (after the execution failed) commits
	 * and lets the row go. Throws from release() when the target never answered a write.
	 */
	function lockDuringAnswer(key: string): { release(): Promise<void> } {
		let held: Promise<Client> | null = null;
		target.beforeAnswer = async () => {
			target.beforeAnswer = null;
			held = (async () => {
				const c = new Client({ connectionString: DATABASE_URL });
				await c.connect();
				heldLocks.add(c);
				await c.query('BEGIN');
				await c.query(`SELECT 1 FROM "${schema}".operations WHERE operation_key = $1 FOR UPDATE`, [key]);
				return c;
			})();
			await held;
		};
		return {
			async release() {
				if (!held) throw new Error(`the lock on ${key} was never taken (no write reached the target)`);
				const c = await held;
				heldLocks.delete(c);
				await c.query('COMMIT');
				await c.end();
			},
		};
	}

	async function maxExecutionId(): Promise<number> {
		const { rows } = await n8nDb.query(`SELECT coalesce(max(id), 0)::int AS m FROM execution_entity`);
		return rows[0].m;
	}
	/** POSTs to a production webhook; returns the execution it started, finished. */
	async function hook(pathname: string, body: Json, headers: Record<string, string> = {}, workflowId: string): Promise<Execution> {
		const before = await maxExecutionId();
		const res = await fetch(`${n8n.url}/webhook/${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
		await res.arrayBuffer();
		if (res.status >= 400) throw new Error(`POST /webhook/${pathname} answered ${res.status}\n${n8n.logTail(40)}`);
		const id = await untilExecution(workflowId, before);
		return rest.finished(id);
	}
	async function untilExecution(workflowId: string, afterId: number): Promise<string> {
		return waitFor(async () => {
			const { rows } = await n8nDb.query(`SELECT id FROM execution_entity WHERE "workflowId" = $1 AND id > $2 ORDER BY id LIMIT 1`, [workflowId, afterId]);
			return rows[0] ? String(rows[0].id) : undefined;
		}, { what: `an execution of ${workflowId}`, timeoutMs: 60_000, intervalMs: 200 });
	}
	/** The editor's "Execute workflow" from a trigger. */
	async function runFrom(workflowId: string, trigger: string): Promise<Execution> {
		const r = await rest.run(workflowId, { triggerToStartFrom: { name: trigger } });
		expect(r.executionId).toBeDefined();
		return rest.finished(r.executionId!);
	}
	/** The editor's "Execute step" on `node` after `earlier`: its run data, the node as destination. */
	async function executeStep(workflowId: string, node: string, earlier: Execution, dirty: string[] = []): Promise<Execution> {
		const r = await rest.run(workflowId, { runData: earlier.runData, destinationNode: { nodeName: node, mode: 'inclusive' }, dirtyNodeNames: dirty });
		expect(r.executionId).toBeDefined();
		return rest.finished(r.executionId!);
	}
	/** Both of n8n's retries of a failed execution: each a new execution (mode retry) starting at the failed node. */
	async function retryBoth(failed: Execution): Promise<Execution[]> {
		const out: Execution[] = [];
		for (const loadWorkflow of [false, true]) {
			const r = await rest.retry(failed.id, loadWorkflow);
			expect({ loadWorkflow, status: r.status }).toEqual({ loadWorkflow, status: 200 });
			const e = await rest.finished(String(r.body.data.id));
			expect(e).toMatchObject({ mode: 'retry', retryOf: failed.id });
			log(`retry of ${failed.id} with ${loadWorkflow ? 'the currently saved' : 'the original'} workflow: execution ${e.id} ${e.status}`);
			out.push(e);
		}
		return out;
	}
	const setOrder = (orderId: string) =>
		rest.saveWorkflow('idempotent-payment', (wf) => {
			const fields = byName(wf, 'Business Input').parameters.assignments.assignments;
			fields.find((a: Json) => a.name === 'orderId').value = orderId;
			fields.find((a: Json) => a.name === 'customerId').value = `cus_${orderId}`;
			wf.pinData = {};
		});

	// --- the payment example (manual trigger): the editor's runs, pinned data, Retry ---

	test('idempotent-payment: Execute workflow, then Execute step on Charge Payment and on the node after it: one write', async () => {
		const o = order('editor');
		await setOrder(o);
		const first = await runFrom('idempotent-payment', MANUAL_TRIGGER);
		expect(first.status).toBe('success');
		expect(takenOf(first, 'Charge Payment')).toEqual([G.succeeded]);
		expect(writesOf(o)).toHaveLength(1);

		const step = await executeStep('idempotent-payment', 'Charge Payment', first);
		expect(takenOf(step, 'Charge Payment')).toEqual([G.doneBefore]);
		expect(outputsOf(step, 'Charge Payment')[G.doneBefore][0]).toMatchObject({ ledger: { replay: true, sent: false }, response: { statusCode: 201 } });

		const after = await executeStep('idempotent-payment', 'Paid', first);
		expect(after.status).toBe('success');
		expect(writesOf(o)).toHaveLength(1);
		expect((await row(`payment:charge:${o}:v1`)).status).toBe('succeeded');
	}, 5 * 60_000);

	test('idempotent-payment: pinned data, on the input and on Charge Payment: one write', async () => {
		const o = order('pinned');
		await rest.saveWorkflow('idempotent-payment', (wf) => {
			wf.pinData = { 'Business Input': [{ json: { orderId: o, customerId: `cus_${o}`, amount: 700, currency: 'EUR' } }] };
		});
		const first = await runFrom('idempotent-payment', MANUAL_TRIGGER);
		expect(takenOf(first, 'Charge Payment')).toEqual([G.succeeded]);
		const again = await runFrom('idempotent-payment', MANUAL_TRIGGER);
		expect(takenOf(again, 'Charge Payment')).toEqual([G.doneBefore]);
		// Pinned output of Charge Payment itself: n8n does not run it; the pin lands on Unrecorded.
		await rest.saveWorkflow('idempotent-payment', (wf) => {
			wf.pinData = { 'Business Input': [{ json: { orderId: o, customerId: `cus_${o}`, amount: 700, currency: 'EUR' } }], 'Charge Payment': [{ json: { orderId: o, ledger: { outcome: 'succeeded' } } }] };
		});
		const pinned = await runFrom('idempotent-payment', MANUAL_TRIGGER);
		expect(takenOf(pinned, 'Charge Payment')).toEqual([G.unrecorded]);
		expect(pinned.runData['Paid']).toBeUndefined();
		expect(writesOf(o)).toHaveLength(1);
		await rest.saveWorkflow('idempotent-payment', (wf) => (wf.pinData = {}));
	}, 5 * 60_000);

	test('idempotent-payment: an execution that failed at Charge Payment, retried with the original and with the saved workflow: one write', async () => {
		const o = order('retry');
		await setOrder(o);
		const lock = lockDuringAnswer(`payment:charge:${o}:v1`);
		const failed = await runFrom('idempotent-payment', MANUAL_TRIGGER);
		expect(failed.status).toBe('error');
		expect(failed.lastNodeExecuted).toBe('Charge Payment');
		expect(failed.error?.message).toMatch(/were sent but their answers could not be recorded/);
		expect(writesOf(o)).toHaveLength(1);
		await lock.release(); // the execution has failed: let the row go, then retry
		for (const retried of await retryBoth(failed)) {
			expect(takenOf(retried, 'Charge Payment')).toEqual([G.inProgress]);
			expect(outputsOf(retried, 'Charge Payment')[G.inProgress][0].ledger.nextStep).toMatch(/wait until the lease has ended/);
			// The retry started at the failed node: the nodes before it did not run again.
			expect(retried.runData['Business Input']).toHaveLength(1);
		}
		expect(writesOf(o)).toHaveLength(1);
	}, 5 * 60_000);

	// --- the payment example behind a webhook: a resent webhook, the test URL, Retry ---

	test('payment webhook: the same order resent with other headers and query → Done Before; another amount → Conflict; one write', async () => {
		const o = order('resent');
		const body = { orderId: o, customerId: `cus_${o}`, amount: 4200, currency: 'EUR' };
		const first = await hook('rp-pay', body, {}, 'payment-webhook');
		expect(takenOf(first, 'Charge Payment')).toEqual([G.succeeded]);
		const resent = await hook('rp-pay?utm_source=retry', body, { 'user-agent': 'python-requests/2.31', 'x-request-id': randomUUID() }, 'payment-webhook');
		expect(takenOf(resent, 'Charge Payment')).toEqual([G.doneBefore]);
		expect(outputsOf(resent, 'Charge Payment')[G.doneBefore][0].response.body.id).toBe(writesOf(o)[0].id);
		const other = await hook('rp-pay', { ...body, amount: 9900 }, {}, 'payment-webhook');
		expect(takenOf(other, 'Charge Payment')).toEqual([G.conflict]);
		expect(writesOf(o)).toHaveLength(1);
	}, 5 * 60_000);

	test('payment webhook: a test-URL run of an order already paid → Done Before, nothing sent', async () => {
		const o = order('testurl');
		const body = { orderId: o, customerId: `cus_${o}`, amount: 1500, currency: 'EUR' };
		await hook('rp-pay', body, {}, 'payment-webhook');
		const before = await maxExecutionId();
		const r = await rest.run('payment-webhook', { triggerToStartFrom: { name: 'Payment Request' } });
		expect(r.waitingForWebhook).toBe(true);
		const res = await fetch(`${n8n.url}/webhook-test/rp-pay`, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'the editor' }, body: JSON.stringify(body) });
		await res.arrayBuffer();
		expect(res.status).toBeLessThan(400);
		const e = await rest.finished(await untilExecution('payment-webhook', before));
		expect(e.mode).toBe('manual');
		expect(takenOf(e, 'Charge Payment')).toEqual([G.doneBefore]);
		expect(writesOf(o)).toHaveLength(1);
	}, 5 * 60_000);

	test('payment webhook: a production execution that failed at Charge Payment, retried both ways: one write', async () => {
		const o = order('hookretry');
		const lock = lockDuringAnswer(`payment:charge:${o}:v1`);
		const failed = await hook('rp-pay', { orderId: o, customerId: `cus_${o}`, amount: 300, currency: 'EUR' }, {}, 'payment-webhook');
		expect(failed.status).toBe('error');
		expect(failed.lastNodeExecuted).toBe('Charge Payment');
		await lock.release(); // the execution has failed: let the row go, then retry
		for (const retried of await retryBoth(failed)) expect(takenOf(retried, 'Charge Payment')).toEqual([G.inProgress]);
		expect(writesOf(o)).toHaveLength(1);
	}, 5 * 60_000);

	test("payment webhook with one of n8n's credentials (Header Auth): the header reaches the target with the idempotency key; resent → Done Before; one write", async () => {
		const o = order('auth');
		const body = { orderId: o, customerId: `cus_${o}`, amount: 1234, currency: 'EUR' };
		const first = await hook('rp-auth', body, {}, 'payment-auth');
		expect(takenOf(first, 'Charge Payment')).toEqual([G.succeeded]);
		const [w] = writesOf(o);
		expect(w.headers['x-api-key']).toBe('target-secret-1');
		expect(w.idempotencyKey).toBe(outputsOf(first, 'Charge Payment')[G.succeeded][0].ledger.idempotencyKey);
		// The credential's secret is in neither the item nor the ledger.
		expect(JSON.stringify(outputsOf(first, 'Charge Payment'))).not.toContain('target-secret-1');
		const { rows } = await pg.query(`SELECT request::text AS r FROM "${schema}".operations WHERE operation_key = $1`, [`payment:charge:${o}:v1`]);
		expect(rows[0].r).not.toContain('target-secret-1');
		const again = await hook('rp-auth', body, { 'x-request-id': randomUUID() }, 'payment-auth');
		expect(takenOf(again, 'Charge Payment')).toEqual([G.doneBefore]);
		expect(writesOf(o)).toHaveLength(1);
	}, 5 * 60_000);

	test('payment after a Wait node: its resume URL called twice at once: one write', async () => {
		const o = order('wait');
		const res = await fetch(`${n8n.url}/webhook/rp-wait`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ orderId: o, customerId: `cus_${o}`, amount: 990, currency: 'EUR' }) });
		const { resumeUrl } = (await res.json()) as { resumeUrl: string };
		const executionId = new URL(resumeUrl).pathname.split('/').filter(Boolean).pop()!;
		await waitFor(async () => (await rest.execution(executionId).catch(() => undefined))?.status === 'waiting', { what: 'the execution to wait', timeoutMs: 60_000, intervalMs: 200 });
		const answers = await Promise.all([1, 2].map(() => fetch(resumeUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"go":true}' }).then(async (r) => (await r.arrayBuffer(), r.status))));
		log(`two resumes at once answered ${answers.join(', ')}`);
		const done = await rest.finished(executionId);
		expect(done.status).toBe('success');
		expect(takenOf(done, 'Charge Payment')).toEqual([G.succeeded]);
		// A second resume after the first one finished: n8n refuses it; nothing more is sent.
		const late = await fetch(resumeUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"go":true}' });
		await late.arrayBuffer();
		log(`a resume after the execution finished answered ${late.status}`);
		await waitFor(async () => {
		const { rows } = await n8nDb.query(`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = 'payment-wait' AND status IN ('new', 'running', 'waiting')`);
		return rows[0].n === 0;
		}, { what: 'no payment-wait execution running or waiting', timeoutMs: 60_000, intervalMs: 200 });
		expect(writesOf(o)).toHaveLength(1);
	}, 5 * 60_000);

	// --- Reserve's default fingerprint after a Webhook ---

	test("Reserve's default Request after a Webhook is the body: other User-Agent, X-Request-Id, query or the test URL → Done Before; another amount → Conflict", async () => {
		const o = order('fingerprint');
		const body = { orderId: o, amount: 4200, currency: 'EUR' };
		const first = await hook('rp-reserve', body, {}, 'reserve-webhook');
		expect(takenOf(first, 'Reserve Operation')).toEqual([R.proceed]);
		expect(takenOf(first, 'Record Payment')).toEqual([C.succeeded]);
		const again = await hook('rp-reserve?source=mobile', body, { 'user-agent': 'okhttp/4.12', 'x-request-id': randomUUID() }, 'reserve-webhook');
		expect(takenOf(again, 'Reserve Operation')).toEqual([R.doneBefore]);
		const before = await maxExecutionId();
		const r = await rest.run('reserve-webhook', { triggerToStartFrom: { name: 'Order' } });
		expect(r.waitingForWebhook).toBe(true);
		const res = await fetch(`${n8n.url}/webhook-test/rp-reserve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
		await res.arrayBuffer();
		const test = await rest.finished(await untilExecution('reserve-webhook', before));
		expect(takenOf(test, 'Reserve Operation')).toEqual([R.doneBefore]);
		const other = await hook('rp-reserve', { ...body, amount: 9900 }, {}, 'reserve-webhook');
		expect(takenOf(other, 'Reserve Operation')).toEqual([R.conflict]);
	}, 5 * 60_000);

	// --- the separate write node: the issue's setup, and the setting that keeps it out of Retry ---

	test('Reserve → HTTP Request (On Error: Stop) → Confirm: Retry sends the write again; Confirm sends it To Review as a possible duplicate, not Succeeded', async () => {
		const o = order('separate');
		target.setModes(['504']);
		const failed = await hook('rp-separate', { orderId: o, amount: 4200 }, {}, 'separate-write');
		expect(failed.status).toBe('error');
		expect(failed.lastNodeExecuted).toBe('Charge');
		expect(writesOf(o)).toHaveLength(1);
		const r = await rest.retry(failed.id, false);
		expect(r.status).toBe(200);
		const retried = await rest.finished(String(r.body.data.id));
		// n8n ran the HTTP node again on Reserve's stored Proceed item: the target, which ignores
		// Idempotency-Key, committed a second write. This is why the write belongs in Guarded HTTP Request.
		expect(writesOf(o)).toHaveLength(2);
		expect(takenOf(retried, 'Confirm Operation')).toEqual([C.review]);
		expect(outputsOf(retried, 'Confirm Operation')[C.review][0].ledger).toMatchObject({ status: 'review', possibleDuplicate: true });
		const stored = await row(`payment:charge:${o}:v1`);
		expect(stored.status).toBe('review');
		expect(stored.possible_duplicate_at).not.toBeNull();
	}, 5 * 60_000);

	test('Reserve → HTTP Request (On Error: Continue (using error output), both outputs into Confirm) → Confirm: the write never fails the execution; a failed Confirm is retried alone (To Review: it cannot tell); one write', async () => {
		const o = order('continue');
		target.setModes(['504']);
		const first = await hook('rp-separate-continue', { orderId: o, amount: 4200 }, {}, 'separate-write-continue');
		expect(first.status).toBe('success');
		expect(takenOf(first, 'Confirm Operation')).toEqual([C.unknown]);
		const refused = await rest.retry(first.id, false);
		log(`retry of a succeeded execution answered ${refused.status}: ${JSON.stringify(refused.body).slice(0, 120)}`);
		expect(refused.status).toBeGreaterThanOrEqual(400);

		const o2 = order('continue-confirm');
		const lock = lockDuringAnswer(`payment:charge:${o2}:v1`);
		const failed = await hook('rp-separate-continue', { orderId: o2, amount: 100 }, {}, 'separate-write-continue');
		expect(failed.status).toBe('error');
		expect(failed.lastNodeExecuted).toBe('Confirm Operation');
		await lock.release(); // the execution has failed: let the row go, then retry
		const [first2, second2] = await retryBoth(failed);
		// The write did not run again (its stored output fed Confirm). Confirm cannot see that: a
		// report from another execution than the lease's may come from a re-run write, so it goes To
		// Review as a possible duplicate; a person finds one write and settles it by hand.
		for (const retried of [first2, second2]) expect(retried.runData['Charge']).toHaveLength(1);
		expect(takenOf(first2, 'Confirm Operation')).toEqual([C.review]);
		expect(takenOf(second2, 'Confirm Operation')).toEqual([C.stale]);
		expect(writesOf(o)).toHaveLength(1);
		expect(writesOf(o2)).toHaveLength(1);
		expect((await row(`payment:charge:${o2}:v1`)).status).toBe('review');
	}, 5 * 60_000);

	// --- the agent examples ---

	const proposal = (customerId: string, amount: number) => ({ action: 'refund', customerId, amount, currency: 'EUR', reason: 'The parcel arrived damaged.' });
	const refundsOf = (customerId: string) => target.writes().filter((w) => (w.body as Json)?.customerId === customerId);
	const refundKey = (c: string, ord: string, amount: string) => `refund:issue:${c}/${ord}/${amount}/EUR:v1`;
	async function ask(customerId: string, orderId: string, proposals: Json[]): Promise<{ status: number; answer: Json; execution: Execution }> {
		model.script({ proposals });
		const before = await maxExecutionId();
		const res = await fetch(`${n8n.url}/webhook/agent-refund`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': randomUUID() }, body: JSON.stringify({ customerId, orderId, message: 'Please refund me.' }) });
		const text = await res.text();
		let answer: Json = {};
		try {
			answer = JSON.parse(text);
		} catch {
			answer = { text };
		}
		const execution = await rest.finished(await untilExecution('agent-policy-ledger', before));
		return { status: res.status, answer, execution };
	}

	test('agent: the customer resends the same request → answered from the ledger; one refund', async () => {
		const c = `cus_resend_${tag}`;
		const first = await ask(c, 'ord-a1', [proposal(c, 25)]);
		expect(first.answer.results.map((r: Json) => r.result)).toEqual(['written']);
		const again = await ask(c, 'ord-a1', [proposal(c, 25)]);
		expect(again.answer.results.map((r: Json) => r.result)).toEqual(['already_done']);
		expect(refundsOf(c)).toHaveLength(1);
		// The editor's "Execute step" on Issue Refund with that run's data: answered from the ledger.
		const step = await executeStep('agent-policy-ledger', 'Issue Refund', first.execution);
		log(`Execute step on Issue Refund: execution ${step.id} ${step.status}, outputs ${JSON.stringify(takenOf(step, 'Issue Refund'))}`);
		expect(takenOf(step, 'Issue Refund')).toEqual([G.doneBefore]);
		expect(refundsOf(c)).toHaveLength(1);
	}, 5 * 60_000);

	test('agent: an execution that failed at Issue Refund, retried both ways: one refund', async () => {
		const c = `cus_retry_${tag}`;
		const lock = lockDuringAnswer(refundKey(c, 'ord-a2', '30.00'));
		const failed = await ask(c, 'ord-a2', [proposal(c, 30)]);
		expect(failed.execution.status).toBe('error');
		expect(failed.execution.lastNodeExecuted).toBe('Issue Refund');
		expect(refundsOf(c)).toHaveLength(1);
		await lock.release(); // the execution has failed: let the row go, then retry
		for (const retried of await retryBoth(failed.execution)) expect(takenOf(retried, 'Issue Refund')).toEqual([G.inProgress]);
		expect(refundsOf(c)).toHaveLength(1);
		expect(model.pending()).toBe(0);
	}, 5 * 60_000);

	/** The approval request the sub-workflow posted for this customer, once its execution waits. */
	async function waitingApproval(customerId: string): Promise<{ approvalUrl: string; executionId: string }> {
		const note = await waitFor(async () => target.notifications().find((m) => (m as Json)?.proposal?.customerId === customerId) as Json | undefined, { what: `the approval request for ${customerId}`, timeoutMs: 60_000, intervalMs: 200 });
		const executionId = new URL(note.approvalUrl).pathname.split('/').filter(Boolean).pop()!;
		await waitFor(async () => (await rest.execution(executionId).catch(() => undefined))?.status === 'waiting', { what: `approval execution ${executionId} to wait`, timeoutMs: 60_000, intervalMs: 200 });
		return { approvalUrl: note.approvalUrl, executionId };
	}
	const submit = async (approvalUrl: string) => {
		const body = new FormData();
		body.append('field-0', 'Approve');
		const r = await fetch(approvalUrl, { method: 'POST', body });
		await r.arrayBuffer();
		return r.status;
	};

	test('agent approval: the Wait node resumed twice at once (two form submissions): one refund', async () => {
		const c = `cus_twice_${tag}`;
		const a = await ask(c, 'ord-a3', [proposal(c, 120)]);
		expect(a.answer.results.map((r: Json) => r.result)).toEqual(['pending_approval']);
		const note = await waitingApproval(c);
		const answers = await Promise.all([submit(note.approvalUrl), submit(note.approvalUrl)]);
		log(`two simultaneous submissions answered ${answers.join(', ')}`);
		const done = await rest.finished(note.executionId);
		expect(done.status).toBe('success');
		await waitFor(async () => {
		const { rows } = await n8nDb.query(`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = 'agent-approval' AND status IN ('new', 'running', 'waiting')`);
		return rows[0].n === 0;
		}, { what: 'no approval execution running or waiting', timeoutMs: 60_000, intervalMs: 200 });
		expect(refundsOf(c)).toHaveLength(1);
	}, 5 * 60_000);

	test('agent: pinned trigger data and a run from the editor, then Execute step on Issue Refund in the approval: answered from the ledger; one refund each', async () => {
		const c = `cus_pin_${tag}`;
		const first = await ask(c, 'ord-a5', [proposal(c, 40)]);
		expect(first.answer.results.map((r: Json) => r.result)).toEqual(['written']);
		// Pin the webhook's item (as "Pin data" on the trigger in the editor) and run the workflow from it.
		const triggerItem = first.execution.runData['Customer Request'][0].data.main[0][0];
		await rest.saveWorkflow('agent-policy-ledger', (wf) => (wf.pinData = { 'Customer Request': [{ json: triggerItem.json }] }));
		model.script({ proposals: [proposal(c, 40)] });
		const pinned = await runFrom('agent-policy-ledger', 'Customer Request');
		log(`pinned run: execution ${pinned.id} ${pinned.status}, Issue Refund outputs ${JSON.stringify(takenOf(pinned, 'Issue Refund'))}`);
		expect(takenOf(pinned, 'Issue Refund')).toEqual([G.doneBefore]);
		await rest.saveWorkflow('agent-policy-ledger', (wf) => (wf.pinData = {}));
		expect(refundsOf(c)).toHaveLength(1);

		// The approval sub-workflow: approved once, then "Execute step" on its Issue Refund.
		const c2 = `cus_apstep_${tag}`;
		await ask(c2, 'ord-a6', [proposal(c2, 140)]);
		const note = await waitingApproval(c2);
		expect(await submit(note.approvalUrl)).toBe(200);
		const approved = await rest.finished(note.executionId);
		expect(takenOf(approved, 'Issue Refund')).toEqual([G.succeeded]);
		const step = await executeStep('agent-approval', 'Issue Refund', approved);
		log(`Execute step on the approval's Issue Refund: execution ${step.id} ${step.status}, outputs ${JSON.stringify(takenOf(step, 'Issue Refund'))}`);
		expect(takenOf(step, 'Issue Refund')).toEqual([G.doneBefore]);
		expect(refundsOf(c2)).toHaveLength(1);
	}, 5 * 60_000);

	test('agent approval: an approval execution that failed at Issue Refund, retried both ways: one refund', async () => {
		const c = `cus_apretry_${tag}`;
		await ask(c, 'ord-a4', [proposal(c, 130)]);
		const note = await waitingApproval(c);
		const lock = lockDuringAnswer(refundKey(c, 'ord-a4', '130.00'));
		expect(await submit(note.approvalUrl)).toBeLessThan(500);
		const failed = await rest.finished(note.executionId);
		expect(failed.status).toBe('error');
		expect(failed.lastNodeExecuted).toBe('Issue Refund');
		expect(refundsOf(c)).toHaveLength(1);
		await lock.release(); // the execution has failed: let the row go, then retry
		for (const retried of await retryBoth(failed)) expect(takenOf(retried, 'Issue Refund')).toEqual([G.inProgress]);
		expect(refundsOf(c)).toHaveLength(1);
	}, 5 * 60_000);

	test('afterwards: every operation of this test was written at most once at the target', async () => {
		const byKey = new Map<string, number>();
		for (const w of target.writes()) {
			const b = w.body as Json;
			const k = b?.customerId ? String(b.customerId) : `order ${b?.orderId}`;
			byKey.set(k, (byKey.get(k) ?? 0) + 1);
		}
		expect(byKey.size).toBeGreaterThan(8);
		const twice = [...byKey.entries()].filter(([, n]) => n > 1).map(([k]) => k);
		// The one exception is the control above: the separate HTTP node at On Error: Stop, re-run by n8n's Retry.
		expect(twice).toEqual([`order ${order('separate')}`]);
	});
});
