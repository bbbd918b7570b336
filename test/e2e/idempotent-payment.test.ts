/**
 * End to end in a real n8n (issue 2, item 6).
 *
 * The package is built, packed and installed into a fresh n8n user folder the way the Community
 * Nodes UI installs it; n8n runs on Postgres; the example workflow workflows/idempotent-payment.json
 * charges a real local HTTP server (the fake payments provider). Same order twice, then the same
 * order key with a different amount:
 *   - the provider holds exactly one payment, and received exactly one POST;
 *   - the ledger row is succeeded with the provider's reference;
 *   - run 1: Charge Payment (a Guarded HTTP Request: reserve, send, record in one node) →
 *     Succeeded; run 2: Done Before (replay of pay_1, nothing sent); run 3: Conflict (nothing sent,
 *     not answered with pay_1).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startFakePaymentsApi, type FakePaymentsApi } from '../helpers/fakePaymentsApi';
import { embedded, harness, type Json, type N8nInstance, type RunResult } from '../helpers/n8nHarness';

const ROOT = path.resolve(__dirname, '../..');
const WORKFLOW_ID = 'idempotent-payment';
const OPERATION_KEY = 'payment:charge:order-1001:v1';
// Guarded HTTP Request's outputs, in order (output 0 is Unrecorded).
const CHARGE = { notRecorded: 0, succeeded: 1, failed: 2, unknown: 3, alreadySucceeded: 4, inProgress: 5, needsReconcile: 6, conflict: 7, failedPermanently: 8, review: 9 };
const NODE = 'Charge Payment';

/** The example workflow with its HTTP Request pointed at `apiUrl` and the business amount set. */
function workflowFor(apiUrl: string, amount: number): Json {
	const wf = JSON.parse(readFileSync(path.join(ROOT, 'workflows/idempotent-payment.json'), 'utf8'));
	const http = wf.nodes.find((n: Json) => n.name === NODE && n.type === 'n8n-nodes-operation-ledger.guardedHttpRequest');
	const input = wf.nodes.find((n: Json) => n.name === 'Business Input');
	if (!http || !input) throw new Error('workflows/idempotent-payment.json lacks its Guarded HTTP Request or Business Input node');
	http.parameters.url = `${apiUrl}/payments`;
	const amountField = input.parameters.assignments.assignments.find((a: Json) => a.name === 'amount');
	amountField.value = amount;
	return wf;
}

const log = (m: string) => process.stdout.write(`[e2e] ${m}\n`);

describe('idempotent payment in a real n8n', () => {
	let db: { url: string; source: string; stop(): Promise<void> };
	let api: FakePaymentsApi;
	let n8n: N8nInstance | undefined;
	let pg: Client;
	const schema = `e2e_${randomBytes(5).toString('hex')}`;
	const runs: RunResult[] = [];

	beforeAll(async () => {
		db = process.env.DATABASE_URL
			? { url: process.env.DATABASE_URL, source: 'env', stop: async () => undefined }
			: await embedded.getDatabase();
		api = await startFakePaymentsApi();
		pg = new Client({ connectionString: db.url });
		await pg.connect();

		let t = Date.now();
		await harness.ensureN8n();
		log(`n8n runtime ready in ${Date.now() - t} ms`);
		t = Date.now();
		const tarball = await harness.packPackage();
		log(`built and packed ${path.basename(tarball)} in ${Date.now() - t} ms`);
		t = Date.now();
		n8n = await harness.createN8nInstance({ databaseUrl: db.url, tarball });
		log(`n8n instance with the package installed in ${Date.now() - t} ms (log: ${n8n.logFile})`);

		t = Date.now();
		await n8n.importCredentials({
			id: 'ledger-pg',
			name: 'Operation Ledger Postgres account',
			type: 'operationLedgerPostgresApi',
			data: {
				connectionType: 'connectionString',
				connectionString: db.url,
				ssl: 'disable',
				schema,
				autoApplySchema: true,
				maxConnections: 5,
			},
		});
		await n8n.importWorkflow(workflowFor(api.url, 4200));
		log(`imported credential and workflow in ${Date.now() - t} ms`);
	}, 20 * 60_000);

	afterAll(async () => {
		// N8N_E2E_KEEP=1 keeps the instance folder (n8n.log, user folder) for a look afterwards.
		await n8n?.cleanup().catch(() => undefined);
		await api?.close().catch(() => undefined);
		if (pg) {
			await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
			await pg.end().catch(() => undefined);
		}
		await db?.stop();
	}, 120_000);

	async function execute(label: string): Promise<RunResult> {
		if (!n8n) throw new Error('n8n instance was not created');
		const r = await n8n.execute(WORKFLOW_ID);
		log(`${label}: n8n execute took ${r.__ms} ms; nodes run: ${harness.nodesRun(r).join(' → ')}`);
		runs.push(r);
		return r;
	}

	test('run 1: Charge Payment reserves, sends the payment once and records success', async () => {
		const r = await execute('run 1 (amount 4200)');
		expect(harness.outputsTaken(r, NODE)).toEqual([CHARGE.succeeded]);
		const reserved = harness.outputItems(r, NODE)![CHARGE.succeeded][0];
		expect(reserved.ledger).toMatchObject({ operationKey: OPERATION_KEY, attempt: 1, sent: true, status: 'succeeded', externalRef: 'pay_1' });
		expect(typeof reserved.ledger.idempotencyKey).toBe('string');
		expect(reserved.ledger.idempotencyKey.length).toBeGreaterThan(0);
		expect(reserved.response).toMatchObject({ statusCode: 201, body: { id: 'pay_1' } });
		expect(harness.nodesRun(r)).toContain('Paid');

		// The provider saw the ledger's downstream key in the Idempotency-Key header.
		const posts = api.requests().filter((q) => q.method === 'POST');
		expect(posts).toHaveLength(1);
		expect(posts[0].idempotencyKey).toBe(reserved.ledger.idempotencyKey);
		expect(posts[0].body).toEqual({ customerId: 'cus_42', amount: 4200, currency: 'EUR' });
	}, 5 * 60_000);

	test('run 2, same input: Done Before with pay_1 and nothing is sent', async () => {
		const r = await execute('run 2 (amount 4200 again)');
		expect(harness.outputsTaken(r, NODE)).toEqual([CHARGE.alreadySucceeded]);
		const replay = harness.outputItems(r, NODE)![CHARGE.alreadySucceeded][0];
		expect(replay.ledger).toMatchObject({ operationKey: OPERATION_KEY, status: 'succeeded', externalRef: 'pay_1', replay: true, sent: false });
		// The stored answer comes back: the client gets what it got the first time.
		expect(replay.response).toMatchObject({ statusCode: 201, body: { id: 'pay_1' } });
		expect(harness.nodesRun(r)).toContain('Already Paid');
		expect(harness.nodesRun(r)).not.toContain('Paid');
		expect(api.requests().filter((q) => q.method === 'POST')).toHaveLength(1);
	}, 5 * 60_000);

	test('run 3, same order key with a different amount: Conflict, nothing sent, not answered with pay_1', async () => {
		await n8n!.importWorkflow(workflowFor(api.url, 9900));
		const r = await execute('run 3 (amount 9900)');
		expect(harness.outputsTaken(r, NODE)).toEqual([CHARGE.conflict]);
		const conflict = harness.outputItems(r, NODE)![CHARGE.conflict][0];
		expect(conflict.amount).toBe(9900);
		expect(conflict.ledger).toMatchObject({ operationKey: OPERATION_KEY });
		expect(JSON.stringify(conflict.ledger)).not.toContain('pay_1');
		expect(harness.nodesRun(r)).toContain('Conflict: Different Request');
		expect(api.requests().filter((q) => q.method === 'POST')).toHaveLength(1);
	}, 5 * 60_000);

	test('afterwards: exactly one payment at the provider, and the ledger row is succeeded with pay_1', async () => {
		expect(runs).toHaveLength(3);
		const payments = api.payments();
		expect(payments).toHaveLength(1);
		expect(payments[0]).toMatchObject({ id: 'pay_1', amount: 4200, currency: 'EUR', customerId: 'cus_42' });

		const { rows } = await pg.query(
			`SELECT operation_key, status, attempt, external_ref, idempotency_key FROM "${schema}".operations`,
		);
		expect(rows).toEqual([
			{
				operation_key: OPERATION_KEY,
				status: 'succeeded',
				attempt: 1,
				external_ref: 'pay_1',
				idempotency_key: payments[0].idempotencyKey,
			},
		]);
		const events = await pg.query(
			`SELECT to_status FROM "${schema}".operation_events WHERE operation_key = $1 ORDER BY event_id`,
			[OPERATION_KEY],
		);
		const statuses = events.rows.map((e: { to_status: string | null }) => e.to_status);
		expect(statuses).toContain('reserved');
		expect(statuses).toContain('succeeded');
		expect(statuses.indexOf('reserved')).toBeLessThan(statuses.indexOf('succeeded'));
	}, 60_000);
});
