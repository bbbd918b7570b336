/**
 * Issue 23 in n8n's real engine (n8n-core's WorkflowExecute, the built nodes from dist/): Reserve
 * Operation behind a network that stops answering (a loopback blackhole proxy, test/helpers/
 * blackholeProxy.ts) ends within the client's deadline with error items on Unrecorded instead of
 * running for ever, and the same credential works after the heal; Enqueue whose COMMIT reached
 * Postgres but whose answer was lost says the batch MAY have been recorded, and `retryable` is
 * true only for tasks with a dedupe key (a second send of those is deduplicated).
 *
 * Slow, real time: about 15 s; each test bounded by a 30 s jest timeout. The credential: Statement
 * Timeout 1000 ms (client deadline 3000 ms), Connection Timeout 1000 ms.
 */
import type { INode } from 'n8n-workflow';
import { closeAllPools as closeSrcPools } from '../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../helpers/db';
import { testCredentials } from '../helpers/fakeExecute';
import { startBlackholeProxy, type BlackholeProxy } from '../helpers/blackholeProxy';
import { Engine, PKG, ROOT, connect, node, runError, sink, source } from './harness';

const DEADLINE_MS = 3000;
const SLACK_MS = 2000;
const RESERVE_OUTPUTS = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'];
const QUEUE_OUTPUTS = ['Unrecorded', 'Result'];

let db: Awaited<ReturnType<typeof testDatabase>>;
let proxy: BlackholeProxy;
let engine: Engine;

beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_engine_deadline' });
	const target = new URL(DATABASE_URL);
	proxy = await startBlackholeProxy(target.hostname, Number(target.port || 5432));
	engine = new Engine({
		credentials: {
			slow: testCredentials(proxy.through(DATABASE_URL), db.schema, { statementTimeoutMs: 1000, connectTimeoutMs: 1000, lockTimeoutMs: 200, maxConnections: 2 }) as never,
		},
	});
});
afterAll(async () => {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	await (require(`${ROOT}/dist/src/db/pool.js`) as { closeAllPools(): Promise<void> }).closeAllPools();
	await closeSrcPools();
	await proxy.close();
	await db.drop();
});

afterEach(() => proxy.heal());

function ut(type: string, parameters: INode['parameters'], onError: INode['onError'] = 'continueRegularOutput'): INode {
	return node('UT', `${PKG}.${type}`, parameters, { typeVersion: 1, credentials: { operationLedgerPostgresApi: { id: 'slow', name: 'slow' } }, onError });
}

async function run(nodes: INode[], outputs: string[]) {
	return engine.run([...nodes, ...outputs.map(sink)], connect({ Source: [['UT']], UT: outputs.map((o) => [o]) }));
}

const reserve = (onError?: INode['onError']) =>
	ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, onError);

it(
	'Reserve behind a blackhole ends within the deadline: both items on Unrecorded, "may have been recorded", retryable; after the heal the same credential answers Proceed',
	async () => {
		// Warm: the pool and the schema check are done through the proxy first.
		const warm = await run([source([{ k: 'eng:deadline:warm:v1' }]), reserve()], RESERVE_OUTPUTS);
		expect(warm.received.Proceed).toHaveLength(1);

		proxy.blackhole();
		const t0 = Date.now();
		const { run: r, received } = await run([source([{ k: 'eng:deadline:a:v1' }, { k: 'eng:deadline:b:v1' }]), reserve()], RESERVE_OUTPUTS);
		expect(Date.now() - t0).toBeLessThan(DEADLINE_MS + SLACK_MS);
		expect(runError(r)).toBeUndefined();
		expect(received.Proceed ?? []).toEqual([]);
		expect(received.Unrecorded).toHaveLength(2);
		for (const item of received.Unrecorded) {
			expect(item.json.error).toMatch(/^Reserve Operation may have been recorded, or not \(2 item\(s\)\): the database connection was lost while the batch's COMMIT was on its way/);
			expect(item.json.error).toMatch(/did not answer within 3000 ms/);
			expect(item.json.retryable).toBe(true);
		}

		// The hung connections were destroyed; a new one cannot be opened while the network is down:
		// with On Error "Stop Workflow" the run fails within the Connection Timeout, and says that
		// nothing was sent.
		const t1 = Date.now();
		const stopped = await run([source([{ k: 'eng:deadline:c:v1' }]), reserve('stopWorkflow')], RESERVE_OUTPUTS);
		expect(Date.now() - t1).toBeLessThan(1000 + SLACK_MS);
		expect(runError(stopped.run)).toMatch(/^Reserve Operation failed and nothing of this batch was recorded \(1 item\(s\)\): the database connection failed: .*timeout/);

		proxy.heal();
		const healed = await run([source([{ k: 'eng:deadline:a:v1' }, { k: 'eng:deadline:b:v1' }]), reserve()], RESERVE_OUTPUTS);
		expect(healed.received.Unrecorded ?? []).toEqual([]);
		expect((healed.received.Proceed ?? []).map((i) => (i.json.ledger as { operationKey: string }).operationKey)).toEqual(['eng:deadline:a:v1', 'eng:deadline:b:v1']);
	},
	30_000,
);

it(
	'Enqueue whose COMMIT answer is lost: 100 tasks stored, every item says it may have been recorded; retryable only with a dedupe key, and sending those again is deduplicated',
	async () => {
		const queue = 'eng-commit-lost';
		const enqueueNode = ut('priorityDequeue', { resource: 'task', operation: 'enqueue', queue, priorityGroup: 'normal', payload: '={{ JSON.stringify($json) }}', dedupeKey: '={{ $json.id ?? "" }}', options: {} });
		await run([source([{ warm: 1 }]), enqueueNode], QUEUE_OUTPUTS);
		const count = async () => (await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.queue_tasks WHERE queue = $1`, [queue])).rows[0].n as number;
		const start = await count();

		let dropped = proxy.dropReplyAfter('COMMIT');
		const plain = await run([source(Array.from({ length: 100 }, (_, i) => ({ n: i }))), enqueueNode], QUEUE_OUTPUTS);
		await dropped;
		expect(plain.received.Result ?? []).toEqual([]);
		expect(plain.received.Unrecorded).toHaveLength(100);
		for (const item of plain.received.Unrecorded) {
			expect(item.json.error).toMatch(/^Enqueue may have been recorded, or not \(100 item\(s\)\)/);
			expect(item.json.error).toMatch(/may record it a second time/);
			expect(item.json.error).not.toMatch(/nothing of this batch was recorded/);
			expect(item.json.retryable).toBe(false);
		}
		expect(await count()).toBe(start + 100);

		dropped = proxy.dropReplyAfter('COMMIT');
		const keyedItems = Array.from({ length: 100 }, (_, i) => ({ id: `order-${i}` }));
		const keyed = await run([source(keyedItems), enqueueNode], QUEUE_OUTPUTS);
		await dropped;
		expect(keyed.received.Unrecorded).toHaveLength(100);
		for (const item of keyed.received.Unrecorded) {
			expect(item.json.error).toMatch(/Sending this item again is safe/);
			expect(item.json.retryable).toBe(true);
		}
		expect(await count()).toBe(start + 200);
		// The client's retry: every task answered "deduplicated", none written twice.
		const again = await run([source(keyedItems), enqueueNode], QUEUE_OUTPUTS);
		expect(again.received.Result).toHaveLength(100);
		expect(again.received.Result.every((i) => i.json.deduplicated === true)).toBe(true);
		expect(await count()).toBe(start + 200);
	},
	30_000,
);
