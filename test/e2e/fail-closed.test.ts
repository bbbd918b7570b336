/**
 * The riskiest fail-closed combinations in a real n8n 2.33.7 process, with the package
 * installed the way users install it. Each is workflows/idempotent-payment.json with the settings
 * of its Charge Payment node (a Guarded HTTP Request: reserve, send, record) changed; the provider
 * is a local fake that records every POST:
 *   - On Error "Continue (regular output)" + Always Output Data, credential on a closed port: the
 *     error item goes to Unrecorded, nothing is sent;
 *   - the same with an empty key part (bad input);
 *   - Always Output Data, same order twice: run 2 answers Done Before and n8n's empty item
 *     goes to Unrecorded, not to Succeeded; exactly one payment.
 * test/engine/ covers the whole matrix in n8n-core's engine; this proves the layout in n8n itself.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import { startFakePaymentsApi, type FakePaymentsApi } from '../helpers/fakePaymentsApi';
import { embedded, harness, type Json, type N8nInstance, type RunResult } from '../helpers/n8nHarness';

const ROOT = path.resolve(__dirname, '../..');
const log = (m: string) => process.stdout.write(`[e2e fail-closed] ${m}\n`);

async function closedPort(): Promise<number> {
	return new Promise((resolve) => {
		const srv = net.createServer();
		srv.listen(0, '127.0.0.1', () => {
			const port = (srv.address() as net.AddressInfo).port;
			srv.close(() => resolve(port));
		});
	});
}

/** idempotent-payment.json as workflow `id`, Charge Payment with `reserve` settings, Unrecorded → a No Op node. */
function variant(id: string, apiUrl: string, opts: { credential: string; orderId: string; reserve: Json }): Json {
	const wf = JSON.parse(readFileSync(path.join(ROOT, 'workflows/idempotent-payment.json'), 'utf8'));
	wf.id = id;
	wf.name = id;
	const byName = (n: string) => wf.nodes.find((x: Json) => x.name === n);
	byName('Charge Payment').parameters.url = `${apiUrl}/payments`;
	const order = byName('Business Input').parameters.assignments.assignments.find((a: Json) => a.name === 'orderId');
	order.value = opts.orderId;
	const reserve = byName('Charge Payment');
	expect(reserve.type).toBe('n8n-nodes-operation-ledger.guardedHttpRequest');
	Object.assign(reserve, opts.reserve);
	for (const n of wf.nodes) if (n.credentials?.operationLedgerPostgresApi) n.credentials.operationLedgerPostgresApi = { id: opts.credential, name: opts.credential };
	wf.nodes.push({ id: `${id}-nr`, name: 'Unrecorded', type: 'n8n-nodes-base.noOp', typeVersion: 1, position: [400, 400], parameters: {} });
	wf.connections['Charge Payment'].main[0] = [{ node: 'Unrecorded', type: 'main', index: 0 }];
	return wf;
}

describe('fail-closed outputs in a real n8n', () => {
	let db: { url: string; source: string; stop(): Promise<void> };
	let api: FakePaymentsApi;
	let n8n: N8nInstance | undefined;
	let pg: Client;
	const schema = `e2e_fc_${randomBytes(5).toString('hex')}`;

	beforeAll(async () => {
		db = process.env.DATABASE_URL ? { url: process.env.DATABASE_URL, source: 'env', stop: async () => undefined } : await embedded.getDatabase();
		api = await startFakePaymentsApi();
		pg = new Client({ connectionString: db.url });
		await pg.connect();
		await harness.ensureN8n();
		const tarball = await harness.packPackage();
		n8n = await harness.createN8nInstance({ databaseUrl: db.url, tarball });
		const cred = (id: string, url: string) => ({
			id,
			name: id,
			type: 'operationLedgerPostgresApi',
			data: { connectionType: 'connectionString', connectionString: url, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 5 },
		});
		const down = db.url.replace(/@[^/]+\//, `@127.0.0.1:${await closedPort()}/`);
		await n8n.importCredentials([cred('ledger-ok', db.url), cred('ledger-down', down)]);
		const lenient = { onError: 'continueRegularOutput', alwaysOutputData: true };
		await n8n.importWorkflow([
			variant('fc-down', api.url, { credential: 'ledger-down', orderId: 'fc-down-1', reserve: lenient }),
			variant('fc-invalid', api.url, { credential: 'ledger-ok', orderId: '', reserve: lenient }),
			variant('fc-aod', api.url, { credential: 'ledger-ok', orderId: 'fc-aod-1', reserve: { alwaysOutputData: true } }),
		]);
	}, 20 * 60_000);

	afterAll(async () => {
		await n8n?.cleanup().catch(() => undefined);
		await api?.close().catch(() => undefined);
		if (pg) {
			await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
			await pg.end().catch(() => undefined);
		}
		await db?.stop();
	}, 120_000);

	async function execute(id: string): Promise<RunResult> {
		const r = await n8n!.execute(id);
		log(`${id}: ${harness.nodesRun(r).join(' → ')} (${r.__ms} ms)`);
		return r;
	}
	const posts = () => api.requests().filter((q) => q.method === 'POST').length;

	test('database down under Continue (regular output) + Always Output Data: Unrecorded, no payment', async () => {
		const r = await execute('fc-down');
		expect(harness.outputsTaken(r, 'Charge Payment')).toEqual([0]);
		expect(String(harness.outputItems(r, 'Charge Payment')![0][0].error)).toMatch(/nothing of this batch was recorded.*database connection failed/);
		expect(harness.nodesRun(r)).toContain('Unrecorded');
		expect(harness.nodesRun(r)).not.toContain('Paid');
		expect(posts()).toBe(0);
	}, 5 * 60_000);

	test('an empty key part under Continue (regular output): Unrecorded, no payment, nothing written', async () => {
		const r = await execute('fc-invalid');
		expect(harness.outputsTaken(r, 'Charge Payment')).toEqual([0]);
		expect(String(harness.outputItems(r, 'Charge Payment')![0][0].error)).toMatch(/entity/);
		expect(harness.nodesRun(r)).not.toContain('Paid');
		expect(posts()).toBe(0);
	}, 5 * 60_000);

	test('Always Output Data, same order twice: one payment; run 2 sends the empty item to Unrecorded, not to Succeeded', async () => {
		const r1 = await execute('fc-aod');
		expect(harness.nodesRun(r1)).toContain('Paid');
		expect(posts()).toBe(1);
		const r2 = await execute('fc-aod');
		// Done Before (4) holds the replay; n8n's empty item is on output 0, Unrecorded.
		expect(harness.outputsTaken(r2, 'Charge Payment').sort()).toEqual([0, 4]);
		expect(harness.outputItems(r2, 'Charge Payment')![0]).toEqual([{}]);
		expect(harness.nodesRun(r2)).not.toContain('Paid');
		expect(posts()).toBe(1);
		const { rows } = await pg.query(`SELECT count(*)::int AS n FROM "${schema}".operations`);
		expect(rows).toEqual([{ n: 1 }]);
	}, 5 * 60_000);
});
