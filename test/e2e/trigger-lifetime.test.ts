/**
 * The Priority Dequeue Trigger in a real n8n 2.33.7 process, with the
 * package packed and installed with npm into .n8n/nodes (docs/install.md's route):
 *   - lifetime: n8n runs with the pool idle timeout shortened by environment
 *     (OPERATION_LEDGER_POOL_IDLE_MS=1000, _SWEEP_MS=250; defaults 5 min and 30 s) and one pool per
 *     process (OPERATION_LEDGER_MAX_POOLS=1, default 32), so the pools of its two credentials evict
 *     each other all the time; a Claim Tasks trigger on its own credential (polling every hour, so
 *     only LISTEN/NOTIFY or a reconnect can wake it) claims after idling past several sweeps, and again after every backend of the package was killed with
 *     pg_terminate_backend (as by a Postgres restart);
 *   - rate: a Wake Up trigger (Priority Groups high/normal/low) with one due task in group
 *     `urgent` starts no execution; a Wake Up trigger with a due task in group `high` whose
 *     workflow claims nothing starts only a handful in 10 s (backoff), where an earlier version started hundreds
 *     per second.
 */
import { ledgerSchema } from '../../src/db/identifiers';
import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { enqueue, queueChannel } from '../../src/queue';
import { harness, sleep, type Json, type N8nInstance } from '../helpers/n8nHarness';
import { waitFor } from '../helpers/wait';

const DB_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const log = (m: string) => process.stdout.write(`[e2e trigger] ${m}\n`);
const CRED = { operationLedgerPostgresApi: { id: 'ledger-pg', name: 'Operation Ledger Postgres account' } };
/** A second credential (another pool): the Claim Tasks trigger's pool is idle while the others poll. */
const CRED_2 = { operationLedgerPostgresApi: { id: 'ledger-pg-2', name: 'Operation Ledger Postgres 2' } };

function triggerWorkflow(id: string, parameters: Json, credentials: Json = CRED): Json {
	return {
		id,
		name: `Trigger ${id}`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [
			{
				id: `${id}-t`,
				name: 'Work Ready',
				type: 'n8n-nodes-operation-ledger.priorityDequeueTrigger',
				typeVersion: 1,
				position: [0, 0],
				credentials,
				parameters,
			},
			{ id: `${id}-n`, name: 'Done', type: 'n8n-nodes-base.noOp', typeVersion: 1, position: [220, 0], parameters: {} },
		],
		connections: { 'Work Ready': { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
		pinData: {},
	};
}

describe('Priority Dequeue Trigger in a real n8n', () => {
	let n8n: N8nInstance;
	let n8nDb: Client;
	let ledger: Pool;
	const schema = `trg_${randomBytes(5).toString('hex')}`;
	const Q = { claim: 'lifetime', other: 'other-group', empty: 'claims-nothing' };
	const WF = { claim: 'trgClaim00000001', other: 'trgOtherGroup001', empty: 'trgEmpty00000001' };

	beforeAll(async () => {
		ledger = new Pool({ connectionString: DB_URL, max: 3 });
		await migrate(ledger, ledgerSchema(schema), true);
		// Seeded before activation: one due task in a group the consumer does not claim, one that
		// the workflow which claims nothing is woken for (Priority Groups left at their default).
		await enqueue(ledger, ledgerSchema(schema), [{ queue: Q.other, group: 'urgent', payload: { n: 'urgent' } }]);
		await enqueue(ledger, ledgerSchema(schema), [{ queue: Q.empty, group: 'high', payload: { n: 'never-claimed' } }]);
		const tarball = await harness.packPackage();
		n8n = await harness.createN8nInstance({ databaseUrl: DB_URL, tarball });
		await n8n.importCredentials([
			{
				id: 'ledger-pg',
				name: 'Operation Ledger Postgres account',
				type: 'operationLedgerPostgresApi',
				data: { connectionType: 'connectionString', connectionString: DB_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 3 },
			},
			{
				id: 'ledger-pg-2',
				name: 'Operation Ledger Postgres 2',
				type: 'operationLedgerPostgresApi',
				data: { connectionType: 'connectionString', connectionString: DB_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 2 },
			},
		]);
		await n8n.importWorkflow([
			triggerWorkflow(
				WF.claim,
				{ queue: Q.claim, mode: 'claim', batchSize: 10, leaseSeconds: 300, useListen: true, pollSeconds: 3600, maxInFlight: 1, options: {} },
				CRED_2,
			),
			triggerWorkflow(WF.other, {
				queue: Q.other,
				mode: 'wakeUp',
				priorityGroups: { group: [{ name: 'high', weight: 5 }, { name: 'normal', weight: 2 }, { name: 'low', weight: 1 }] },
				useListen: true,
				pollSeconds: 1,
				maxInFlight: 1,
				options: {},
			}),
			triggerWorkflow(WF.empty, { queue: Q.empty, mode: 'wakeUp', useListen: true, pollSeconds: 1, maxInFlight: 1, options: {} }),
		]);
		for (const id of Object.values(WF)) await n8n.publishWorkflow(id);
		await n8n.start({
			// Short idle timeout, and one pool per process: the two credentials' pools evict each other.
			env: { OPERATION_LEDGER_POOL_IDLE_MS: '1000', OPERATION_LEDGER_POOL_SWEEP_MS: '250', OPERATION_LEDGER_MAX_POOLS: '1' },
		});
		n8nDb = new Client({ connectionString: n8n.database.url });
		await n8nDb.connect();
		// n8n's own activation state: each activated trigger opens its LISTEN connection (n8n
		// answers /healthz before it has activated published workflows).
		await waitFor(async () => {
			const { rows } = await ledger.query(`SELECT count(DISTINCT query)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = ANY($1)`, [
				Object.values(Q).map((q) => `LISTEN ${queueChannel(ledgerSchema(schema), q)}`),
			]);
			return rows[0].n === Object.values(Q).length;
		}, { what: 'the three triggers to be activated (LISTEN on their queues)', timeoutMs: 120_000, intervalMs: 250 });
		log(`n8n at ${n8n.url}, ledger schema ${schema}`);
	}, 20 * 60_000);

	afterAll(async () => {
		await n8nDb?.end().catch(() => undefined);
		await n8n?.cleanup().catch(() => undefined);
		await ledger?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
		await ledger?.end().catch(() => undefined);
	}, 5 * 60_000);

	const executionTimes = async (workflowId: string): Promise<number[]> => {
		const { rows } = await n8nDb.query(`SELECT "startedAt" FROM execution_entity WHERE "workflowId" = $1 ORDER BY id`, [workflowId]);
		return rows.map((r) => new Date(r.startedAt).getTime());
	};
	const claimedPayloads = async (queue: string): Promise<unknown[]> => {
		const { rows } = await ledger.query(`SELECT payload FROM "${schema}".queue_tasks WHERE queue = $1 AND status = 'processing' ORDER BY id`, [queue]);
		return rows.map((r) => r.payload);
	};
	/** A backend ran LISTEN on the queue's channel last (`done`: and has finished it, it is idle). */
	const listening = async (queue: string, done = false): Promise<boolean> => {
		const { rows } = await ledger.query(
			`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = $1 AND (NOT $2 OR state = 'idle')`,
			[`LISTEN ${queueChannel(ledgerSchema(schema), queue)}`, done],
		);
		return rows[0].n > 0;
	};

	test('rate: no execution for work of a group its consumer does not claim; a consumer that claims nothing is backed off', async () => {
		// Both triggers were activated with their task already due; measure 10 s from now.
		const from = Date.now();
		await sleep(10_000); // real time on purpose: executions are counted over a 10 s window (a rate)
		const other = (await executionTimes(WF.other)).filter((t) => t >= from && t < from + 10_000).length;
		const empty = (await executionTimes(WF.empty)).filter((t) => t >= from && t < from + 10_000).length;
		const totalEmpty = (await executionTimes(WF.empty)).length;
		log(`executions in 10 s: other group ${other}, consumer claiming nothing ${empty} (${totalEmpty} since activation)`);
		expect(other).toBe(0);
		expect(await executionTimes(WF.other)).toEqual([]);
		expect(empty).toBeLessThanOrEqual(4);
		expect(totalEmpty).toBeGreaterThanOrEqual(1);
	}, 60_000);

	test('lifetime: claims after idling past the pool idle timeout, and after its backends are killed', async () => {
		await waitFor(() => listening(Q.claim), { what: 'the LISTEN connection', timeoutMs: 30_000, intervalMs: 100 });
		// Many sweeps (idle 1 s, sweep every 250 ms) while nothing happens on this queue.
		// real time on purpose: idling past the pool's idle timeout is the case under test
		await sleep(4000);
		const before = (await executionTimes(WF.claim)).length;
		await enqueue(ledger, ledgerSchema(schema), [{ queue: Q.claim, group: 'high', payload: { n: 'after-idle' } }]);
		await waitFor(async () => (await claimedPayloads(Q.claim)).length === 1, { what: 'the claim after idling', timeoutMs: 15_000, intervalMs: 100 });
		expect(await claimedPayloads(Q.claim)).toEqual([{ n: 'after-idle' }]);
		await waitFor(async () => (await executionTimes(WF.claim)).length === before + 1, { what: 'its execution', timeoutMs: 15_000, intervalMs: 100 });

		// As a Postgres restart would: every backend of the package (pools and LISTEN) is killed.
		const killed = await ledger.query(
			`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
			  WHERE datname = current_database() AND application_name LIKE 'n8n-nodes-operation-ledger%'`,
		);
		log(`terminated ${killed.rows[0].n} backend(s) of the package`);
		expect(killed.rows[0].n).toBeGreaterThanOrEqual(1);
		// Back means its LISTEN statement has finished (the backend is idle again): from then on a
		// notification reaches it, and the enqueue below cannot fall between the two.
		await waitFor(() => listening(Q.claim, true), { what: 'the LISTEN connection to come back (its LISTEN done)', timeoutMs: 60_000, intervalMs: 100 });
		await enqueue(ledger, ledgerSchema(schema), [{ queue: Q.claim, group: 'low', payload: { n: 'after-kill' } }]);
		await waitFor(async () => (await claimedPayloads(Q.claim)).length === 2, { what: 'the claim after the kill', timeoutMs: 15_000, intervalMs: 100 });
		expect(await claimedPayloads(Q.claim)).toEqual([{ n: 'after-idle' }, { n: 'after-kill' }]);
		const logText = n8n.logTail(400);
		expect(logText).not.toMatch(/after calling end on the pool/);
	}, 180_000);
});
