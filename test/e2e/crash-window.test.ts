/**
 * The crash window, proven in a real n8n.
 *
 * Deployment: n8n queue mode when Redis answers (one `n8n start` main and two `n8n worker`
 * processes, each with this package installed in its own user folder as the Community Nodes UI
 * does, Postgres as n8n's database, Redis for Bull). Without Redis (a bare machine) the same cases
 * run against a single `n8n start` in regular mode, and the crash kills that process instead; the
 * test says which deployment it ran.
 *
 * The payments provider is a real local HTTP server that can, per request, commit and then hang,
 * commit and then answer 504, fail before committing (503), or succeed. For each of these, and for
 * a worker killed with SIGKILL after the provider committed but before Confirm ran, RUNS orders go
 * through: the payment workflow runs; n8n notices a dead execution; the operator retries the same
 * business input; the reconcile workflow runs; the operator retries again. Then every order must
 * have exactly one payment at the provider (none from an attempt that did not commit) and a
 * succeeded ledger row holding the provider's reference. A table of the cases is printed.
 *
 * Then a Wait node whose resume URL is called twice at once: at most one payment.
 *
 * The payment workflow is workflows/idempotent-payment.json, whose Charge Payment is a Guarded
 * HTTP Request (reserve, send, record in one node). After the SIGKILL the test also presses both
 * of n8n's Retry buttons (POST /rest/executions/:id/retry, loadWorkflow true and false) on the dead
 * execution, as an operator would, and logs what n8n did: neither may send the charge again.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { Client } from 'pg';
import { startFakePaymentsApi, type FaultMode, type FakePaymentsApi } from '../helpers/fakePaymentsApi';
import { setLedgerClock } from '../helpers/db';
import { exampleWorkflows, harness, type Json, type N8nInstance, type N8nProcess } from '../helpers/n8nHarness';
import { redisAnswers } from '../helpers/redis';
import { waitFor } from '../helpers/wait';
import { ownerSession, type N8nRest } from '../helpers/n8nRest';

const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const RUNS = Number(process.env.CRASH_TEST_RUNS || 10);
const REDIS_HOST = process.env.REDIS_HOST || '127.0.0.1';
const REDIS_PORT = Number(process.env.REDIS_PORT || 6379);
/** Seconds: the payment workflow's Reserve settle window (stored per operation) and its lease. */
const SETTLE_SECONDS = 3;
const LEASE_SECONDS = 8;
const HTTP_TIMEOUT_MS = 2000;

const log = (m: string) => process.stdout.write(`[crash] ${m}\n`);

// ---------------------------------------------------------------------------------------------
// The workflows: the shipped examples, adapted only where a test must (trigger, URLs, timings).

/** idempotent-payment.json with a Webhook instead of the Manual Trigger, reading the order from the body. */
const paymentWorkflow = (apiUrl: string, id: string, webhookPath: string): Json =>
	exampleWorkflows.webhookPaymentWorkflow(apiUrl, { id, webhookPath, leaseSeconds: LEASE_SECONDS, settleSeconds: SETTLE_SECONDS, timeoutMs: HTTP_TIMEOUT_MS });

/** reconcile-payments.json against the fake provider (no extra settle delay: the operations carry theirs). */
const reconcileWorkflow = (apiUrl: string): Json => exampleWorkflows.reconcileWorkflow(apiUrl, { claimSeconds: 60 });

/**
 * The payment behind a human approval: Webhook → answer with the Wait node's resume URL → Wait
 * (resumed by a webhook call) → Business Input → Reserve → Charge → Confirm.
 */
function approvalWorkflow(apiUrl: string): Json {
	const wf = paymentWorkflow(apiUrl, 'approval-payment', 'approve-pay');
	const trigger = wf.nodes.find((n: Json) => n.name === 'Payment Request');
	trigger.parameters.responseMode = 'responseNode';
	const input = wf.nodes.find((n: Json) => n.name === 'Business Input');
	for (const a of input.parameters.assignments.assignments) a.value = `={{ $('Payment Request').item.json.body.${a.name} }}`;
	wf.nodes.push(
		{
			id: randomUUID(),
			name: 'Send Approval Link',
			type: 'n8n-nodes-base.respondToWebhook',
			typeVersion: 1.1,
			position: [-300, 300],
			parameters: { respondWith: 'json', responseBody: '={{ { resumeUrl: $execution.resumeUrl } }}', options: {} },
		},
		{
			id: randomUUID(),
			name: 'Wait for Approval',
			type: 'n8n-nodes-base.wait',
			typeVersion: 1.1,
			position: [-200, 300],
			webhookId: randomUUID(),
			parameters: { resume: 'webhook', httpMethod: 'POST', options: {} },
		},
	);
	wf.connections['Payment Request'] = { main: [[{ node: 'Send Approval Link', type: 'main', index: 0 }]] };
	wf.connections['Send Approval Link'] = { main: [[{ node: 'Wait for Approval', type: 'main', index: 0 }]] };
	wf.connections['Wait for Approval'] = { main: [[{ node: 'Business Input', type: 'main', index: 0 }]] };
	return wf;
}

// ---------------------------------------------------------------------------------------------
// Which process sent a request: the client port → socket inode (/proc/net/tcp) → owning pid.

function socketInode(localPort: number, remotePort: number): string | undefined {
	for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
		let text = '';
		try {
			text = readFileSync(file, 'utf8');
		} catch {
			continue;
		}
		for (const line of text.split('\n').slice(1)) {
			const f = line.trim().split(/\s+/);
			if (f.length < 10) continue;
			const lp = parseInt(f[1].split(':')[1], 16);
			const rp = parseInt(f[2].split(':')[1], 16);
			if (lp === localPort && rp === remotePort) return f[9];
		}
	}
	return undefined;
}

function processGroupOf(pid: number): number | undefined {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
	} catch {
		return undefined;
	}
}

/** The process group leader (one of `leaders`) whose group holds the socket with this inode. */
function ownerOf(inode: string, leaders: number[]): number | undefined {
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		const group = processGroupOf(Number(entry));
		if (group === undefined || !leaders.includes(group)) continue;
		let fds: string[] = [];
		try {
			fds = readdirSync(`/proc/${entry}/fd`);
		} catch {
			continue;
		}
		for (const fd of fds) {
			try {
				if (readlinkSync(`/proc/${entry}/fd/${fd}`) === `socket:[${inode}]`) return group;
			} catch {
				/* closed meanwhile */
			}
		}
	}
	return undefined;
}

// ---------------------------------------------------------------------------------------------

interface CaseRow {
	case: string;
	runs: number;
	/** Payments carrying the first attempt's idempotency key: one per run when that write committed, none when not. */
	firstAttemptExpected: number;
	firstAttemptSeen: number;
	paymentsExpected: number;
	paymentsSeen: number;
	duplicates: number;
	states: Record<string, number>;
}

describe('the crash window in a real n8n', () => {
	let api: FakePaymentsApi;
	let pg: Client;
	let n8nDb: Client;
	let main: N8nInstance;
	const workers: Array<{ instance: N8nInstance; proc: N8nProcess }> = [];
	let mainProc: N8nProcess;
	let queueMode = false;
	let rest: N8nRest;
	/** What n8n's two Retry buttons did with the killed execution, for the log and docs/recovery.md. */
	const retrySeen: string[] = [];
	const schema = `crash_${randomBytes(5).toString('hex')}`;
	const table: CaseRow[] = [];
	/** Seconds the ledger's clock (ledger_now()) of `schema` stands ahead of real time; see reconcile(). */
	let ledgerClockOffset = 0;

	beforeAll(async () => {
		api = await startFakePaymentsApi();
		pg = new Client({ connectionString: DATABASE_URL });
		await pg.connect();
		queueMode = await redisAnswers(REDIS_HOST, REDIS_PORT);
		log(`deployment: ${queueMode ? `queue mode (main + 2 workers, Redis ${REDIS_HOST}:${REDIS_PORT})` : 'regular mode (Redis not reachable)'}`);
		const tarball = await harness.packPackage();
		const queueEnv = queueMode
			? {
					EXECUTIONS_MODE: 'queue',
					QUEUE_BULL_REDIS_HOST: REDIS_HOST,
					QUEUE_BULL_REDIS_PORT: String(REDIS_PORT),
					QUEUE_BULL_PREFIX: `crash${randomBytes(4).toString('hex')}`,
					// Milliseconds: notice a dead worker's job within seconds instead of a minute.
					QUEUE_WORKER_LOCK_DURATION: '6000',
					QUEUE_WORKER_LOCK_RENEW_TIME: '2000',
					QUEUE_WORKER_STALLED_INTERVAL: '3000',
				}
			: {};
		main = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, tarball, extraEnv: queueEnv });
		await main.importCredentials({
			id: 'ledger-pg',
			name: 'Operation Ledger Postgres account',
			type: 'operationLedgerPostgresApi',
			data: { connectionType: 'connectionString', connectionString: DATABASE_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 5 },
		});
		for (const wf of [paymentWorkflow(api.url, 'crash-payment', 'crash-pay'), reconcileWorkflow(api.url), approvalWorkflow(api.url)]) {
			await main.importWorkflow(wf);
		}
		for (const id of ['crash-payment', 'approval-payment']) await main.publishWorkflow(id);
		mainProc = await main.start();
		await main.waitForWebhooks([{ path: 'crash-pay' }]);
		n8nDb = new Client({ connectionString: main.database.url });
		await n8nDb.connect();
		rest = await ownerSession(main.url);
		if (queueMode) {
			for (let i = 0; i < 2; i++) {
				const instance = await harness.createN8nInstance({
					databaseUrl: DATABASE_URL,
					n8nDatabase: main.database.database,
					encryptionKey: main.encryptionKey,
					tarball,
					// Resume URLs ($execution.resumeUrl) are built by the worker: they must name the main.
					extraEnv: { ...queueEnv, WEBHOOK_URL: `${main.url}/` },
				});
				workers.push({ instance, proc: await instance.spawn('worker') });
			}
		}
		log(`n8n ready at ${main.url}; ledger schema ${schema}`);
	}, 15 * 60_000);

	afterAll(async () => {
		if (table.length) {
			const lines = [
				'| case | runs | first-attempt payments expected | seen | payments expected | payments seen | duplicates | final ledger states |',
				'|---|---|---|---|---|---|---|---|',
				...table.map(
					(r) =>
						`| ${r.case} | ${r.runs} | ${r.firstAttemptExpected} | ${r.firstAttemptSeen} | ${r.paymentsExpected} | ${r.paymentsSeen} | ${r.duplicates} | ${Object.entries(r.states)
							.map(([s, n]) => `${s}: ${n}`)
							.join(', ')} |`,
				),
			];
			log(`results (${queueMode ? 'queue mode' : 'regular mode'}):\n${lines.join('\n')}`);
			if (retrySeen.length) log(`n8n's Retry of the killed execution (${queueMode ? 'queue mode' : 'regular mode'}):\n  ${retrySeen.join('\n  ')}`);
		}
		for (const w of workers) await w.instance.cleanup().catch(() => undefined);
		await n8nDb?.end().catch(() => undefined);
		await main?.cleanup().catch(() => undefined);
		await pg?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
		await pg?.end().catch(() => undefined);
		await api?.close();
	}, 5 * 60_000);

	// --- helpers over n8n, the provider and the ledger ---

	const finishedCount = async (workflowId: string): Promise<number> => {
		const { rows } = await n8nDb.query(
			`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1 AND status NOT IN ('new', 'running', 'waiting')`,
			[workflowId],
		);
		return rows[0].n;
	};

	/** POSTs each order to the payment webhook and waits until n8n finished that many more executions. */
	async function runPayments(orders: string[], amount = 4200): Promise<void> {
		const before = await finishedCount('crash-payment');
		await Promise.all(orders.map((o) => post('/webhook/crash-pay', { orderId: o, customerId: `cus_${o}`, amount, currency: 'EUR' })));
		await waitFor(async () => (await finishedCount('crash-payment')) >= before + orders.length, { what: `${orders.length} payment executions`, timeoutMs: 120_000, intervalMs: 250 });
	}

	async function post(pathname: string, body: Json): Promise<Response> {
		// n8n answers /healthz/readiness before it has activated published workflows: a webhook
		// can answer 404 for a few seconds after start. Wait for the webhook to be there (it answers
		// anything but 404), and only for that.
		const res = await waitFor(
			async () => {
				const r = await fetch(`${main.url}${pathname}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify(body),
				});
				if (r.status !== 404) return r;
				await r.arrayBuffer();
				return undefined;
			},
			{ what: `the webhook ${pathname} to be registered (an answer other than 404)`, timeoutMs: 30_000, intervalMs: 500 },
		);
		if (res.status >= 300) throw new Error(`POST ${pathname} answered ${res.status}: ${await res.text()}\n${main.logTail(40)}`);
		return res;
	}

	/**
	 * Passes the settle window of every unknown payment on the ledger's clock (not by waiting it
	 * out), then runs the reconcile workflow. The clock only moves forward (the offset adds up), so
	 * leases and claims stored on it keep their order.
	 */
	async function reconcile(): Promise<void> {
		ledgerClockOffset += SETTLE_SECONDS + 1;
		await setLedgerClock(pg, schema, ledgerClockOffset);
		await main.execute('reconcile-payments');
	}

	async function ledger(orders: string[]) {
		const keys = orders.map((o) => `payment:charge:${o}:v1`);
		const { rows } = await pg.query(
			`SELECT operation_key, status, attempt, external_ref FROM "${schema}".operations WHERE operation_key = ANY($1)`,
			[keys],
		);
		return new Map(rows.map((r) => [r.operation_key.split(':')[2], r]));
	}

	async function events(order: string): Promise<string[]> {
		const { rows } = await pg.query(`SELECT event FROM "${schema}".operation_events WHERE operation_key = $1 ORDER BY event_id`, [
			`payment:charge:${order}:v1`,
		]);
		return rows.map((r) => r.event);
	}

	const paymentsOf = (order: string) => api.payments().filter((p) => p.customerId === `cus_${order}`);

	/** Asserts the end state of a case and adds its row to the table. */
	async function settle(name: string, orders: string[], firstAttemptCommitted = true): Promise<void> {
		const rows = await ledger(orders);
		const { rows: firstKeys } = await pg.query(
			`SELECT "${schema}".downstream_idempotency_key(k, 1) AS key FROM unnest($1::text[]) AS k`,
			[orders.map((o) => `payment:charge:${o}:v1`)],
		);
		const firstKeySet = new Set(firstKeys.map((r) => r.key));
		const firstAttemptSeen = orders.reduce((n, o) => n + paymentsOf(o).filter((p) => firstKeySet.has(p.idempotencyKey)).length, 0);
		const states: Record<string, number> = {};
		let seen = 0;
		let duplicates = 0;
		for (const o of orders) {
			const pays = paymentsOf(o);
			seen += pays.length;
			duplicates += Math.max(0, pays.length - 1);
			const row = rows.get(o);
			const state = row ? row.status : 'missing';
			states[state] = (states[state] ?? 0) + 1;
		}
		const firstAttemptExpected = firstAttemptCommitted ? orders.length : 0;
		table.push({ case: name, runs: orders.length, firstAttemptExpected, firstAttemptSeen, paymentsExpected: orders.length, paymentsSeen: seen, duplicates, states });
		expect(firstAttemptSeen).toBe(firstAttemptExpected);
		for (const o of orders) {
			const pays = paymentsOf(o);
			expect({ order: o, payments: pays.length }).toEqual({ order: o, payments: 1 });
			expect({ order: o, status: rows.get(o)?.status, ref: rows.get(o)?.external_ref }).toEqual({ order: o, status: 'succeeded', ref: pays[0].id });
		}
	}

	const ordersFor = (name: string) => Array.from({ length: RUNS }, (_, i) => `${name}-${i}-${randomBytes(3).toString('hex')}`);

	/**
	 * One fault case, all runs at once: the payment runs into `mode`; the operator retries; the
	 * reconcile workflow runs; the operator retries again.
	 */
	async function faultCase(name: string, mode: FaultMode, expectFirst: 'unknown' | 'succeeded', firstCommits = true) {
		const orders = ordersFor(name);
		api.setMode(mode);
		await runPayments(orders);
		api.setMode('succeed');
		const afterFirst = await ledger(orders);
		for (const o of orders) expect({ order: o, status: afterFirst.get(o)?.status }).toEqual({ order: o, status: expectFirst });
		const postsBefore = api.requests().filter((r) => r.method === 'POST').length;
		await runPayments(orders); // the operator's retry
		if (expectFirst === 'unknown') {
			// Unknown is never retried blindly: the retry sent nothing.
			expect(api.requests().filter((r) => r.method === 'POST').length).toBe(postsBefore);
		}
		await reconcile();
		await runPayments(orders); // and again
		await settle(name, orders, firstCommits);
		return orders;
	}

	it(`succeed: ${RUNS} orders, each charged once`, async () => {
		const orders = await faultCase('succeed', 'succeed', 'succeeded');
		expect(await events(orders[0])).toEqual(['reserved', 'confirmed_succeeded']);
	}, 10 * 60_000);

	it(`commit then hang: the timeout is unknown, reconcile finds the payment`, async () => {
		const orders = await faultCase('commit-then-hang', 'commit-then-hang', 'unknown');
		expect(await events(orders[0])).toEqual(['reserved', 'confirmed_unknown', 'reconciled_succeeded']);
	}, 10 * 60_000);

	it(`commit then 504: unknown, reconcile finds the payment`, async () => {
		const orders = await faultCase('commit-then-504', 'commit-then-504', 'unknown');
		expect(await events(orders[0])).toEqual(['reserved', 'confirmed_unknown', 'reconciled_succeeded']);
	}, 10 * 60_000);

	it(`fail before commit (503): unknown, reconcile finds nothing, the next retry pays once`, async () => {
		const orders = await faultCase('fail-before-commit-503', 'fail-before-commit-503', 'unknown', false);
		expect(await events(orders[0])).toEqual(['reserved', 'confirmed_unknown', 'reconciled_failed', 'reserved', 'confirmed_succeeded']);
		const rows = await ledger(orders);
		for (const o of orders) expect(rows.get(o)?.attempt).toBe(2);
	}, 10 * 60_000);

	it(`SIGKILL after the provider committed, before Confirm ran`, async () => {
		const orders = ordersFor('sigkill');
		for (const [i, order] of orders.entries()) {
			api.setMode('commit-then-hang');
			const executionsBefore = await finishedCount('crash-payment');
			await post('/webhook/crash-pay', { orderId: order, customerId: `cus_${order}`, amount: 4200, currency: 'EUR' });
			// The barrier: the provider has committed and holds its answer, so Confirm cannot have run.
			await api.committed((p) => p.customerId === `cus_${order}`, 60_000);
			const request = api.requests().find((r) => r.method === 'POST' && (r.body as Json)?.customerId === `cus_${order}`);
			const inode = await waitFor(async () => socketInode(request?.remotePort ?? -1, api.port) ?? false, { what: 'the client socket', timeoutMs: 5000, intervalMs: 20 });
			const leaders = queueMode ? workers.map((w) => w.proc.pid) : [mainProc.pid];
			const victim = ownerOf(inode, leaders);
			expect(victim).toBeDefined();
			const w = workers.find((x) => x.proc.pid === victim);
			if (queueMode) await w!.proc.kill();
			else await mainProc.kill();
			api.setMode('succeed');
			// n8n notices the dead execution (a worker's stall check, or the restarted main's recovery).
			if (queueMode) {
				w!.proc = await w!.instance.spawn('worker');
			} else {
				mainProc = await main.start();
			}
			await waitFor(async () => (await finishedCount('crash-payment')) > executionsBefore, { what: `n8n to mark the killed execution finished`, timeoutMs: 180_000, intervalMs: 500 });
			const { rows } = await n8nDb.query(
				`SELECT status FROM execution_entity WHERE "workflowId" = 'crash-payment' ORDER BY id DESC LIMIT 1`,
			);
			// n8n 2.x marks the killed execution crashed (or error). n8n 1.x in queue mode re-runs a
			// stalled job on another worker: the re-run meets the ledger (the lease is still held,
			// so Reserve answers In Progress), sends nothing, and the execution ends "success".
			const accepted = queueMode && harness.N8N_MAJOR < 2 ? ['crashed', 'error', 'success'] : ['crashed', 'error'];
			expect(accepted).toContain(rows[0].status);
			expect(paymentsOf(order)).toHaveLength(1);
			if (i === 0) log(`killed pid ${victim}; n8n marked the execution "${rows[0].status}"`);
			if (i === 0) {
				// The operator's first idea: n8n's Retry, as the editor's Executions list offers it.
				// Neither button may send the charge again, whatever n8n makes of the dead execution.
				const { rows: dead } = await n8nDb.query(`SELECT id FROM execution_entity WHERE "workflowId" = 'crash-payment' ORDER BY id DESC LIMIT 1`);
				for (const loadWorkflow of [true, false]) {
					const r = await rest.retry(String(dead[0].id), loadWorkflow);
					const retried = r.status === 200 ? await rest.finished(String(r.body.data.id)).catch(() => undefined) : undefined;
					const seen = `Retry with ${loadWorkflow ? 'currently saved' : 'original'} workflow: HTTP ${r.status}${
						retried ? `, execution ${retried.id} ${retried.status}, nodes run: ${Object.keys(retried.runData).join(', ') || 'none'}${retried.error?.message ? `, error "${retried.error.message}"` : ''}` : `: ${String(r.body.message ?? '').slice(0, 200)}`
					}`;
					retrySeen.push(seen);
					log(seen);
					expect(paymentsOf(order)).toHaveLength(1);
				}
			}
		}
		// The leases run out (they were never confirmed); the operator retries; reconcile; retry.
		await waitFor(async () => {
		const { rows } = await pg.query(
			`SELECT count(*)::int AS n FROM "${schema}".operations WHERE operation_key LIKE 'payment:charge:sigkill-%' AND lease_expires_at > "${schema}".ledger_now()`,
		);
		return rows[0].n === 0;
		}, { what: 'the leases to expire', timeoutMs: 60_000, intervalMs: 500 });
		const postsBefore = api.requests().filter((r) => r.method === 'POST').length;
		await runPayments(orders);
		expect(api.requests().filter((r) => r.method === 'POST').length).toBe(postsBefore);
		const afterRetry = await ledger(orders);
		for (const o of orders) expect({ order: o, status: afterRetry.get(o)?.status }).toEqual({ order: o, status: 'unknown' });
		await reconcile();
		await runPayments(orders);
		await settle('sigkill-after-commit', orders);
		expect(await events(orders[0])).toEqual(['reserved', 'lease_expired', 'reconciled_succeeded']);
	}, 20 * 60_000);

	it('a Wait node resumed twice at once charges at most once', async () => {
		const results: number[] = [];
		const orders: string[] = [];
		for (let i = 0; i < RUNS; i++) {
			const order = `approval-${i}-${randomBytes(3).toString('hex')}`;
			orders.push(order);
			const before = await finishedCount('approval-payment');
			const res = await post('/webhook/approve-pay', { orderId: order, customerId: `cus_${order}`, amount: 990, currency: 'EUR' });
			const { resumeUrl } = (await res.json()) as { resumeUrl: string };
			expect(resumeUrl).toMatch(/^http/);
			// Wait until the execution is parked in the Wait node, then resume it twice at once.
			await waitFor(async () => {
			const { rows } = await n8nDb.query(`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = 'approval-payment' AND status = 'waiting'`);
			return rows[0].n > 0;
			}, { what: 'the execution to wait', timeoutMs: 60_000, intervalMs: 200 });
			const answers = await Promise.all([1, 2].map(() => fetch(resumeUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"approved":true}' })));
			results.push(...answers.map((a) => a.status));
			await waitFor(async () => (await finishedCount('approval-payment')) > before, { what: 'the approval execution to finish', timeoutMs: 120_000, intervalMs: 250 });
			// Absence proven by a state, not by sleeping: once no approval execution is new, running or
			// waiting, a second resume that n8n accepted has run to its end, and its payment would show.
			await waitFor(async () => {
			const { rows } = await n8nDb.query(
				`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = 'approval-payment' AND status IN ('new', 'running', 'waiting')`,
			);
			return rows[0].n === 0;
			}, { what: 'no approval execution left running or waiting', timeoutMs: 60_000, intervalMs: 100 });
			expect(paymentsOf(order).length).toBeLessThanOrEqual(1);
			expect(paymentsOf(order).length).toBe(1);
			const rows = await ledger([order]);
			expect(rows.get(order)).toMatchObject({ status: 'succeeded', external_ref: paymentsOf(order)[0].id });
		}
		log(`resume answers (two per run): ${results.join(', ')}`);
		await settle('wait-node-resumed-twice', orders);
	}, 15 * 60_000);
});
