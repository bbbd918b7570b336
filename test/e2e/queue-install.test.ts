/**
 * The install route for n8n queue mode (docs/operations.md, "Queue mode install"), run as an
 * operator runs it: one `n8n start` main and one `n8n worker` (Postgres as n8n's database, Redis
 * for Bull, one N8N_ENCRYPTION_KEY), both started WITHOUT the package; then, in each process's own
 * user folder, `npm install <package> --legacy-peer-deps --ignore-scripts` in `~/.n8n/nodes`; then each
 * process restarted. N8N_REINSTALL_MISSING_PACKAGES is not set.
 *
 * Asserted: before the install and after it but before the restart, the main's node types
 * (`/types/nodes.json`, what the editor's canvas draws from; a type missing there is the "?" node)
 * hold none of the package's nodes (n8n loads packages at start); each copy installed is complete
 * (every file of the tarball is on disk); after the restart the main lists every node of the
 * package, and a production webhook execution, which queue mode hands to the worker, runs Reserve
 * Operation on the worker: the execution succeeds and the ledger holds the operation.
 *
 * Redis: REDIS_HOST/REDIS_PORT (default 127.0.0.1:6379) when it answers, else a redis-server of
 * its own on a free loopback port (Debian's redis-server, installed with apt-get when missing).
 * The test fails, it does not skip, when there is none.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { harness, type Json, type N8nInstance, type N8nProcess } from '../helpers/n8nHarness';
import { ownerSession } from '../helpers/n8nRest';
import { testRedis, type TestRedis } from '../helpers/redis';
import { waitFor } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '../..');
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const PKG = 'n8n-nodes-operation-ledger';
const log = (m: string) => process.stdout.write(`[queue-install] ${m}\n`);

/** The package's node types as n8n names them: `<package>.<name>` for each node file of package.json's n8n.nodes. */
const PACKAGE_TYPES: string[] = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).n8n.nodes as string[]).map((f) => {
	const base = path.basename(f).replace(/\.node\.js$/, '');
	return `${PKG}.${base[0].toLowerCase()}${base.slice(1)}`;
});

/** Every file (not folder) below `dir`, as paths relative to it. */
function filesBelow(dir: string, rel = ''): string[] {
	return readdirSync(path.join(dir, rel)).flatMap((name) => {
		const r = path.join(rel, name);
		return statSync(path.join(dir, r)).isDirectory() ? filesBelow(dir, r) : [r];
	});
}

/** Webhook (POST /webhook/<path>, answered at once) → Reserve Operation, its outputs unconnected. */
function reserveWorkflow(webhookPath: string): Json {
	return {
		id: 'queue-install-reserve',
		name: 'Queue install: Reserve on a worker',
		settings: { executionOrder: 'v1' },
		nodes: [
			{ id: randomUUID(), name: 'Order', type: 'n8n-nodes-base.webhook', typeVersion: 2, webhookId: randomUUID(), position: [0, 0], parameters: { httpMethod: 'POST', path: webhookPath, responseMode: 'onReceived', options: {} } },
			{
				id: randomUUID(),
				name: 'Reserve Operation',
				type: `${PKG}.reserveOperation`,
				typeVersion: 1,
				position: [250, 0],
				parameters: { keyMode: 'parts', resource: 'order', action: 'pay', entity: '={{ $json.body.orderId }}', version: 'v1', target: 'payments-api', leaseSeconds: 300 },
				credentials: { operationLedgerPostgresApi: { id: null, name: 'Operation Ledger Postgres account' } },
			},
		],
		connections: { Order: { main: [[{ node: 'Reserve Operation', type: 'main', index: 0 }]] } },
	};
}

jest.setTimeout(20 * 60_000);

test('queue mode: the package installed into the main and the worker, each restarted, loads every node and runs on the worker', async () => {
	let redis: TestRedis | undefined;
	let main: N8nInstance | undefined;
	let worker: N8nInstance | undefined;
	let workerProc: N8nProcess | undefined;
	const pg = new Client({ connectionString: DATABASE_URL });
	let n8nDb: Client | undefined;
	const schema = `qinstall_${randomBytes(5).toString('hex')}`;
	await pg.connect();
	try {
		redis = await testRedis(log);
		const [redisHost, redisPort] = [redis.host, redis.port];
		log(`Redis ${redisHost}:${redisPort}`);
		const queueEnv = {
			EXECUTIONS_MODE: 'queue',
			QUEUE_BULL_REDIS_HOST: redisHost,
			QUEUE_BULL_REDIS_PORT: String(redisPort),
			QUEUE_BULL_PREFIX: `qinstall${randomBytes(4).toString('hex')}`,
		};
		const tarball = await harness.packPackage();
		const tarFiles = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
			.split('\n')
			.filter((l) => l && !l.endsWith('/'))
			.map((l) => l.replace(/^package\//, ''));

		// Main and worker as they ran before: no package.
		main = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, extraEnv: queueEnv });
		await main.start();
		worker = await harness.createN8nInstance({
			databaseUrl: DATABASE_URL,
			n8nDatabase: main.database.database,
			encryptionKey: main.encryptionKey,
			extraEnv: { ...queueEnv, WEBHOOK_URL: `${main.url}/` },
		});
		workerProc = await worker.spawn('worker');
		// One owner session (n8n's setup runs once; its cookie outlives a restart: same encryption key).
		const rest = await ownerSession(main.url);
		const packageTypesOnMain = async () => {
			// A kept-alive socket that n8n closed while the test was installing fails the first request
			// ("other side closed"); one more request goes out on a new connection.
			const get = () => rest.request('GET', '/types/nodes.json');
			const r = await get().catch((e: { cause?: { code?: string } }) => {
				if (e?.cause?.code !== 'UND_ERR_SOCKET') throw e;
				return get();
			});
			if (r.status !== 200 || !Array.isArray(r.body)) throw new Error(`GET /types/nodes.json answered ${r.status}`);
			const names = new Set((r.body as Json[]).map((t) => t.name as string));
			expect(names.has('n8n-nodes-base.webhook')).toBe(true); // the list is real
			return PACKAGE_TYPES.filter((t) => names.has(t));
		};
		expect(await packageTypesOnMain()).toEqual([]);

		// The route: in each process's user folder, npm install into ~/.n8n/nodes.
		for (const inst of [main, worker]) {
			const nodesDir = path.join(inst.userFolder, '.n8n', 'nodes');
			log(`$ cd ${nodesDir} && npm install ${path.basename(tarball)} --legacy-peer-deps --ignore-scripts`);
			execFileSync('npm', ['install', tarball, '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=warn'], { cwd: nodesDir, stdio: 'pipe', timeout: 5 * 60_000 });
			const installed = path.join(nodesDir, 'node_modules', PKG);
			const onDisk = new Set(filesBelow(installed));
			expect(tarFiles.filter((f) => !onDisk.has(f))).toEqual([]);
			expect(onDisk.size).toBeGreaterThan(50);
		}
		// Installed but not restarted: the running main has not loaded it.
		expect(await packageTypesOnMain()).toEqual([]);

		await main.importCredentials({
			id: 'ledger-pg',
			name: 'Operation Ledger Postgres account',
			type: 'operationLedgerPostgresApi',
			data: { connectionType: 'connectionString', connectionString: DATABASE_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 2 },
		});
		const hook = `qinstall-${randomBytes(3).toString('hex')}`;
		await main.importWorkflow(reserveWorkflow(hook));
		await main.publishWorkflow('queue-install-reserve');

		// Restart both.
		await main.stop();
		await workerProc.stop();
		await main.start();
		workerProc = await worker.spawn('worker');
		expect(await packageTypesOnMain()).toEqual(PACKAGE_TYPES);
		expect(PACKAGE_TYPES).toHaveLength(7);

		// A production webhook execution: queue mode hands it to the worker.
		await main.waitForWebhooks([{ path: hook }]);
		const res = await fetch(`${main.url}/webhook/${hook}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ orderId: 'q-1' }), signal: AbortSignal.timeout(30_000) });
		expect(res.status).toBe(200);
		n8nDb = new Client({ connectionString: main.database.url });
		await n8nDb.connect();
		const db = n8nDb;
		const exec = await waitFor(
			async () => {
				const r = await db.query(`SELECT id, status FROM execution_entity WHERE "workflowId" = 'queue-install-reserve' ORDER BY id DESC LIMIT 1`);
				return r.rows[0] && !['new', 'running'].includes(r.rows[0].status) ? (r.rows[0] as { id: string; status: string }) : undefined;
			},
			{ what: 'the webhook execution to finish', timeoutMs: 60_000, intervalMs: 250 },
		);
		expect(exec.status).toBe('success');
		const ops = await pg.query(`SELECT operation_key FROM "${schema}".operations`);
		expect(ops.rows).toHaveLength(1);
		// The worker ran it (its own log names the execution), and neither process met an unknown type.
		const workerLog = readFileSync(worker.logFile, 'utf8');
		expect(workerLog).toMatch(new RegExp(`execution ${exec.id}\\b`));
		for (const f of [main.logFile, worker.logFile]) expect(readFileSync(f, 'utf8')).not.toMatch(/Unrecognized node type/);
		log(`main and worker restarted with the package: ${PACKAGE_TYPES.length} node types on the main; execution ${exec.id} ran on the worker (${exec.status})`);
	} catch (e) {
		// What n8n said, for the failure's reader (the folders are removed below).
		if (main) log(`main log (tail):\n${main.logTail(60)}`);
		if (worker) log(`worker log (tail):\n${worker.logTail(60)}`);
		throw e;
	} finally {
		await n8nDb?.end().catch(() => undefined);
		await worker?.cleanup().catch(() => undefined);
		await main?.cleanup().catch(() => undefined);
		await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
		await pg.end().catch(() => undefined);
		redis?.stop();
	}
});
