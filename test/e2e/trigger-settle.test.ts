/**
 * Priority Dequeue Trigger, Claim Tasks with Settle Tasks "When the Execution Finishes", in a real
 * n8n 2.33.7 (the package packed and installed into .n8n/nodes), no Complete node in any workflow:
 *   - regular mode: Trigger → Set "Work": the tasks end completed; Trigger → Stop and Error: the
 *     task is failed with the run's error (an attempt counted, retried after the backoff, dead at
 *     max attempts); Trigger → Wait (2 h, so n8n saves the execution as waiting): the task stays
 *     processing under its lease and is claimable again only when the lease (5 s) has expired;
 *   - queue mode (a main and two workers on Redis): Trigger → Work: the tasks end completed, which
 *     shows that the run object reaches the trigger on the main from the worker.
 */
import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { ledgerSchema } from '../../src/db/identifiers';
import { migrate } from '../../src/db/migrate';
import { enqueue } from '../../src/queue';
import { harness, type Json, type N8nInstance, type N8nProcess } from '../helpers/n8nHarness';
import { testRedis, type TestRedis } from '../helpers/redis';
import { waitFor } from '../helpers/wait';

const DB_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const log = (m: string) => process.stdout.write(`[e2e trigger-settle] ${m}\n`);
const CRED = { operationLedgerPostgresApi: { id: 'ledger-pg', name: 'Ledger' } };

const node = (name: string, type: string, typeVersion: number, parameters: Json, x: number, extra: Json = {}): Json => ({
	id: `${name}-${randomBytes(3).toString('hex')}`,
	name,
	type,
	typeVersion,
	position: [x, 0],
	parameters,
	...extra,
});

/** Trigger (claim, Settle Tasks When the Execution Finishes) → `second`. */
function workflow(id: string, queue: string, second: Json, over: Json = {}): Json {
	const trigger = node(
		'Claim',
		'n8n-nodes-operation-ledger.priorityDequeueTrigger',
		1,
		{ queue, mode: 'claim', batchSize: 5, leaseSeconds: 300, settleTasks: 'onFinish', useListen: true, pollSeconds: 1, maxInFlight: 2, maxPerMinute: 6000, options: {}, ...over },
		0,
		{ credentials: CRED },
	);
	return {
		id,
		name: `Settle ${id}`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [trigger, second],
		connections: { Claim: { main: [[{ node: second.name, type: 'main', index: 0 }]] } },
		pinData: {},
	};
}
const work = () => node('Work', 'n8n-nodes-base.set', 3.4, { mode: 'manual', assignments: { assignments: [{ id: randomBytes(4).toString('hex'), name: 'worked', value: true, type: 'boolean' }] }, includeOtherFields: true, options: {} }, 220);
const stop = () => node('Broken', 'n8n-nodes-base.stopAndError', 1, { errorType: 'errorMessage', errorMessage: 'Work broke on purpose' }, 220);
const wait = () => node('Approval', 'n8n-nodes-base.wait', 1.1, { resume: 'timeInterval', amount: 2, unit: 'hours' }, 220, { webhookId: randomBytes(8).toString('hex') });

const credential = (schema: string): Json => ({
	id: 'ledger-pg',
	name: 'Ledger',
	type: 'operationLedgerPostgresApi',
	data: { connectionType: 'connectionString', connectionString: DB_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 4 },
});

interface Row {
	where: string;
	status: string;
	attempts: number;
	last_error: string | null;
	leased: boolean | null;
}

describe('Priority Dequeue Trigger settles its tasks when the execution finishes (real n8n)', () => {
	let ledger: Pool;
	const schema = `tsettle_${randomBytes(5).toString('hex')}`;
	const S = () => ledgerSchema(schema);
	beforeAll(async () => {
		ledger = new Pool({ connectionString: DB_URL, max: 3 });
		await migrate(ledger, S(), true);
	});
	afterAll(async () => {
		await ledger?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
		await ledger?.end().catch(() => undefined);
	});

	/** The task's row, in queue_tasks while live (leased: lease not yet expired), else in the archive. */
	const row = async (id: string): Promise<Row> => {
		const live = await ledger.query(`SELECT 'queue' AS where, status, attempts, last_error, lease_expires_at > now() AS leased FROM "${schema}".queue_tasks WHERE id = $1`, [id]);
		if (live.rows[0]) return live.rows[0];
		const done = await ledger.query(`SELECT 'archive' AS where, status, attempts, last_error, NULL::boolean AS leased FROM "${schema}".queue_tasks_archive WHERE id = $1`, [id]);
		return done.rows[0];
	};
	/**
	 * Every trigger activated: each has its LISTEN connection (its own application name; the last
	 * query shown is the health probe once one ran, so the LISTEN text is not looked for).
	 */
	const activated = (queues: string[]) =>
		waitFor(
			async () => {
				const { rows } = await ledger.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'n8n-nodes-operation-ledger:listen'`);
				return rows[0].n >= queues.length;
			},
			{ what: 'the triggers to be activated (LISTEN on their queues)', timeoutMs: 120_000, intervalMs: 250 },
		);

	describe('regular mode', () => {
		let n8n: N8nInstance;
		let n8nDb: Client;
		const Q = { ok: 'settle-ok', err: 'settle-err', wait: 'settle-wait' };
		const WF = { ok: 'settleOk00000001', err: 'settleErr0000001', wait: 'settleWait000001' };

		beforeAll(async () => {
			const tarball = await harness.packPackage();
			n8n = await harness.createN8nInstance({ databaseUrl: DB_URL, tarball });
			await n8n.importCredentials([credential(schema)]);
			await n8n.importWorkflow([
				workflow(WF.ok, Q.ok, work()),
				workflow(WF.err, Q.err, stop()),
				// A 5 s lease: the waiting execution's task becomes claimable again when it expires.
				workflow(WF.wait, Q.wait, wait(), { leaseSeconds: 5, maxInFlight: 1 }),
			]);
			for (const id of Object.values(WF)) await n8n.publishWorkflow(id);
			await n8n.start();
			n8nDb = new Client({ connectionString: n8n.database.url });
			await n8nDb.connect();
			await activated(Object.values(Q));
			log(`n8n at ${n8n.url}, ledger schema ${schema}`);
		}, 20 * 60_000);
		afterAll(async () => {
			await n8nDb?.end().catch(() => undefined);
			await n8n?.cleanup().catch(() => undefined);
		}, 5 * 60_000);

		const executions = async (wf: string): Promise<Array<{ status: string }>> =>
			(await n8nDb.query(`SELECT status FROM execution_entity WHERE "workflowId" = $1 ORDER BY id`, [wf])).rows;

		test('a succeeding workflow without a Complete node: every task ends completed', async () => {
			const tasks = await enqueue(ledger, S(), Array.from({ length: 12 }, (_, i) => ({ queue: Q.ok, group: 'normal', payload: { i } })));
			await waitFor(async () => (await Promise.all(tasks.map((t) => row(t.taskId)))).every((r) => r.where === 'archive'), {
				what: 'the 12 tasks archived',
				timeoutMs: 60_000,
				intervalMs: 200,
			});
			for (const t of tasks) expect(await row(t.taskId)).toMatchObject({ where: 'archive', status: 'succeeded', attempts: 1 });
			// Batches of at most 5: three executions or more, each a success once n8n has written its
			// status (the run reaches the trigger before that).
			await waitFor(
				async () => {
					const rows = await executions(WF.ok);
					return rows.length >= 3 && rows.every((e) => e.status === 'success');
				},
				{ what: 'every execution of the succeeding workflow recorded as a success', timeoutMs: 30_000, intervalMs: 200 },
			);
		}, 120_000);

		test('a workflow that throws: the task is failed with the error, retried, and dead at its max attempts', async () => {
			const [twice] = await enqueue(ledger, S(), [{ queue: Q.err, group: 'normal', payload: { n: 'twice' }, maxAttempts: 2 }]);
			const [once] = await enqueue(ledger, S(), [{ queue: Q.err, group: 'normal', payload: { n: 'once' }, maxAttempts: 1 }]);
			await waitFor(async () => (await row(once.taskId)).status === 'dead', { what: 'the one-attempt task dead', timeoutMs: 60_000, intervalMs: 200 });
			expect(await row(once.taskId)).toMatchObject({ status: 'dead', attempts: 1, last_error: 'Work broke on purpose' });
			// The two-attempt task: failed once (pending again after the 2.5 to 5 s backoff), then dead.
			await waitFor(async () => (await row(twice.taskId)).attempts >= 1 && (await row(twice.taskId)).status !== 'processing', { what: 'the first failure recorded', timeoutMs: 60_000, intervalMs: 100 });
			expect((await row(twice.taskId)).last_error).toBe('Work broke on purpose');
			await waitFor(async () => (await row(twice.taskId)).status === 'dead', { what: 'the two-attempt task dead after its retry', timeoutMs: 60_000, intervalMs: 200 });
			expect(await row(twice.taskId)).toMatchObject({ status: 'dead', attempts: 2, last_error: 'Work broke on purpose' });
			// Three attempts in all; the first two may share one execution (batch size 5: both tasks
			// can be claimed together), so two or three executions, each of them an error, once n8n
			// has written the last one's status (the run reaches the trigger before that).
			const ex = await waitFor(
				async () => {
					const rows = await executions(WF.err);
					return rows.length >= 2 && rows.every((e) => e.status === 'error') ? rows : undefined;
				},
				{ what: 'every execution of the throwing workflow recorded as an error', timeoutMs: 30_000, intervalMs: 200 },
			);
			expect(ex.length).toBeLessThanOrEqual(3);
		}, 120_000);

		test('a workflow with a Wait node: the task stays processing under its lease; claimable again only after the lease expired', async () => {
			const [task] = await enqueue(ledger, S(), [{ queue: Q.wait, group: 'normal', payload: { n: 'approve me' } }]);
			// n8n saved the execution as waiting: the trigger has its run ('waiting') and settled nothing.
			await waitFor(async () => (await executions(WF.wait)).some((e) => e.status === 'waiting'), { what: 'the execution waiting', timeoutMs: 60_000, intervalMs: 100 });
			await waitFor(() => n8n.logTail(400).includes('status is "waiting"'), { what: 'the trigger to log that it leaves the task', timeoutMs: 30_000, intervalMs: 100 });
			const during = await row(task.taskId);
			log(`task while its execution waits: ${JSON.stringify(during)}`);
			expect(during).toMatchObject({ where: 'queue', status: 'processing', attempts: 1 });
			// Still processing after the trigger's decision means nothing settled it; the lease decides:
			// after expiry the trigger claims it again (attempt 2), starting a second waiting execution.
			await waitFor(async () => (await row(task.taskId)).attempts === 2, { what: 'the task claimed again after its lease expired', timeoutMs: 60_000, intervalMs: 200 });
			expect(await row(task.taskId)).toMatchObject({ where: 'queue', status: 'processing', attempts: 2 });
			expect(n8n.logTail(400).match(/status is "waiting"/g)?.length ?? 0).toBeGreaterThanOrEqual(1);
		}, 120_000);
	});

	describe('queue mode (a main and two workers)', () => {
		let redis: TestRedis;
		let main: N8nInstance;
		const workers: N8nInstance[] = [];
		const procs: N8nProcess[] = [];
		let n8nDb: Client;
		const queue = 'settle-queue-mode';
		const wf = 'settleQueue00001';

		beforeAll(async () => {
			redis = await testRedis(log);
			const queueEnv = { EXECUTIONS_MODE: 'queue', QUEUE_BULL_REDIS_HOST: redis.host, QUEUE_BULL_REDIS_PORT: String(redis.port), QUEUE_BULL_PREFIX: `tsettle${randomBytes(4).toString('hex')}` };
			const tarball = await harness.packPackage();
			main = await harness.createN8nInstance({ databaseUrl: DB_URL, tarball, extraEnv: queueEnv });
			await main.importCredentials([credential(schema)]);
			await main.importWorkflow([workflow(wf, queue, work())]);
			await main.publishWorkflow(wf);
			procs.push(await main.start());
			for (let i = 0; i < 2; i++) {
				const w = await harness.createN8nInstance({ databaseUrl: DB_URL, n8nDatabase: main.database.database, encryptionKey: main.encryptionKey, tarball, extraEnv: { ...queueEnv, WEBHOOK_URL: `${main.url}/` } });
				workers.push(w);
				procs.push(await w.spawn('worker'));
			}
			n8nDb = new Client({ connectionString: main.database.url });
			await n8nDb.connect();
			await activated([queue]);
		}, 20 * 60_000);
		afterAll(async () => {
			await n8nDb?.end().catch(() => undefined);
			for (const w of workers) await w.cleanup().catch(() => undefined);
			await main?.cleanup().catch(() => undefined);
			redis?.stop();
		}, 5 * 60_000);

		test('the run reaches the trigger from the worker: every task ends completed', async () => {
			const tasks = await enqueue(ledger, S(), Array.from({ length: 12 }, (_, i) => ({ queue, group: 'normal', payload: { i } })));
			await waitFor(async () => (await Promise.all(tasks.map((t) => row(t.taskId)))).every((r) => r.where === 'archive'), {
				what: 'the 12 tasks archived',
				timeoutMs: 90_000,
				intervalMs: 200,
			});
			for (const t of tasks) expect(await row(t.taskId)).toMatchObject({ where: 'archive', status: 'succeeded', attempts: 1 });
			const { rows } = await n8nDb.query(`SELECT status FROM execution_entity WHERE "workflowId" = $1`, [wf]);
			expect(rows.length).toBeGreaterThanOrEqual(3);
			expect(rows.every((r) => r.status === 'success')).toBe(true);
			// The workers ran the executions (each logs the jobs it takes).
			const ran = workers.map((w) => /execution/i.test(w.logTail(400)));
			log(`worker logs mention executions: ${JSON.stringify(ran)}`);
			expect(ran.some(Boolean)).toBe(true);
		}, 150_000);
	});
});
