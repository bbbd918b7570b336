#!/usr/bin/env node
// `npm run demo`: the idempotent-payment story in a real n8n, for a person to watch.
//
//   1. A database: DATABASE_URL when set, otherwise an embedded Postgres (started here, in
//      .cache/embedded-pg; nothing to install or configure).
//   2. n8n 2.33.7 with Node 22 (or N8N_VERSION / N8N_NODE_VERSION; installed once into ~/.cache/n8n-nodes-operation-ledger; the first
//      time takes several minutes), this package built, packed and installed the way the Community
//      Nodes UI does, n8n started.
//   3. A fake payments provider on 127.0.0.1 (test/helpers/fakePaymentsApi.ts).
//   4. Replay and conflict: the example workflow workflows/idempotent-payment.json run three times
//      for order-1001: 4200 EUR, 4200 EUR again, then 9900 EUR under the same order key.
//   5. The crash window, for order-1002: the provider commits the charge and holds its answer (a
//      barrier, so the kill always lands between the commit and the ledger's record of it); the
//      n8n process group is killed with SIGKILL and n8n restarted; the lease runs out; a retry
//      finds the operation unknown and sends nothing; workflows/reconcile-payments.json asks the
//      provider and records the payment; the next retry answers Done Before.
//   6. What happened: which output each run took, the payments at the provider, the ledger rows and
//      their event log. Exit status 1 when the story does not hold (scripts/lib/demo-story.mjs: not
//      exactly one payment per order key, or a step took another outcome).
//
// Flags: --keep  leave the n8n folder, its database and the ledger schema in place afterwards.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { DEMO_ORDERS, operationKeyOf, storyProblems } from './lib/demo-story.mjs';
import { getDatabase, repoRoot } from './lib/embedded-pg.mjs';
import { manualPaymentWorkflow, reconcileWorkflow, webhookPaymentWorkflow } from './lib/example-workflows.mjs';
import { loadFakePaymentsApi } from './lib/fake-payments.mjs';
import { createN8nInstance, ensureN8n, nodesRun, outputItems, outputsTaken, packPackage, pollUntil } from './lib/n8n.mjs';

const keep = process.argv.includes('--keep');
const WORKFLOW_ID = 'idempotent-payment';
const RECONCILE_ID = 'reconcile-payments';
// The crash story's copy of the payment workflow: a Webhook trigger, so that the long-running
// `n8n start` runs it (the process that is killed), and a short lease and settle window, so that
// the story does not wait the example's 300 s and 120 s.
const CRASH_ID = 'idempotent-payment-webhook';
const CRASH_PATH = 'demo-pay';
const CRASH_LEASE_SECONDS = 15;
const CRASH_SETTLE_SECONDS = 3;
const RETRY_ID = 'idempotent-payment-retry';
// Charge Payment is a Guarded HTTP Request (workflows/idempotent-payment.json): it reserves, sends
// and records in one node; output 0 is Unrecorded.
const CHARGE = 'Charge Payment';
const CHARGE_OUTPUTS = ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before', 'To Review'];
const RESOLVE = 'Resolve Payments';
const [REPLAY, CRASH] = DEMO_ORDERS;

const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (s) => console.log(`\n${bold(`== ${s}`)}`);
const info = (s) => console.log(`   ${s}`);
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

function table(rows, columns) {
	if (rows.length === 0) return ['(none)'];
	const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : r[c] instanceof Date ? r[c].toISOString() : String(r[c]))));
	const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
	const line = (vals) => vals.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd();
	return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
}

/** The names of the nodes that the outputs `node` took lead to in `wf` (what a reader sees on the canvas). */
function outputTargets(wf, node, outputs) {
	return outputs.flatMap((i) => (wf.connections[node]?.main?.[i] ?? []).map((c) => c.node));
}

async function main() {
	const t0 = Date.now();
	const cleanups = [];
	const onSignal = () => {
		console.log('\nInterrupted: cleaning up...');
		Promise.allSettled(cleanups.reverse().map((f) => f())).finally(() => process.exit(130));
	};
	process.on('SIGINT', onSignal);
	process.on('SIGTERM', onSignal);
	let holds = false;
	try {
		step('1. Database');
		const db = await getDatabase();
		cleanups.push(() => db.stop());
		info(
			db.source === 'env'
				? 'Using DATABASE_URL.'
				: `No DATABASE_URL set: started an embedded Postgres on 127.0.0.1:${db.port} (data in ${path.relative(repoRoot, db.dataDir)}).`,
		);
		const { default: pg } = await import('pg');
		const client = new pg.Client({ connectionString: db.url });
		await client.connect();
		cleanups.push(() => client.end());
		const schema = `ledger_demo_${randomBytes(4).toString('hex')}`;
		info(`The ledger goes into schema "${schema}" (the nodes create it on first use).`);
		const ledgerRow = async (orderId) =>
			(
				await client.query(`SELECT status, attempt, lease_expires_at, settle_until, external_ref FROM "${schema}".operations WHERE operation_key = $1`, [
					operationKeyOf(orderId),
				])
			).rows[0];

		step('2. n8n with this package installed as a community node');
		let t = Date.now();
		const rt = await ensureN8n({ log: (m) => info(m) });
		info(`n8n ${rt.version} with Node ${rt.nodeVersion.replace(/^v/, '')}: ${rt.dir} (${secs(Date.now() - t)})`);
		t = Date.now();
		const tarball = await packPackage();
		info(`Built and packed this package: ${path.basename(tarball)} (${secs(Date.now() - t)})`);
		t = Date.now();
		const n8n = await createN8nInstance({ databaseUrl: db.url, tarball, keep });
		cleanups.push(() => n8n.cleanup());
		info(`Installed it into ${n8n.nodesDir} with npm, as the Community Nodes UI does (${secs(Date.now() - t)})`);
		info(`n8n's own data: Postgres database "${n8n.database.database}"; log: ${n8n.logFile}`);

		step('3. Fake payments provider');
		const { startFakePaymentsApi } = await loadFakePaymentsApi();
		const api = await startFakePaymentsApi();
		cleanups.push(() => api.close());
		info(`POST ${api.url}/payments (honours Idempotency-Key, records every payment)`);
		const postCount = () => api.requests().filter((q) => q.method === 'POST').length;

		t = Date.now();
		await n8n.importCredentials({
			id: 'ledger-pg',
			name: 'Operation Ledger Postgres account',
			type: 'operationLedgerPostgresApi',
			data: { connectionType: 'connectionString', connectionString: db.url, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 5 },
		});
		const crashOrder = { orderId: CRASH.orderId, customerId: CRASH.customerId, amount: 1500, currency: 'EUR' };
		const reconcileWf = reconcileWorkflow(api.url);
		// The operator's retries of the crashed order: the example workflow with that order's input.
		const retryWf = { ...manualPaymentWorkflow(api.url, crashOrder), id: RETRY_ID, name: `Idempotent payment (${CRASH.orderId})` };
		const crashWf = webhookPaymentWorkflow(api.url, { id: CRASH_ID, webhookPath: CRASH_PATH, leaseSeconds: CRASH_LEASE_SECONDS, settleSeconds: CRASH_SETTLE_SECONDS });
		// One import for all of them: each n8n CLI call boots n8n (seconds).
		await n8n.importWorkflow([manualPaymentWorkflow(api.url, { amount: 4200 }), reconcileWf, retryWf, crashWf]);
		await n8n.publishWorkflow(CRASH_ID);
		info(
			`Imported the credential "Operation Ledger Postgres account", the workflows "Idempotent payment" and "Reconcile payments", ` +
				`a copy of the payment workflow for ${CRASH.orderId}, and one behind a webhook, published (${secs(Date.now() - t)})`,
		);
		t = Date.now();
		let main = await n8n.start();
		await n8n.waitForWebhooks([{ path: CRASH_PATH }]);
		info(`n8n started: ${main.url} (${secs(Date.now() - t)})`);
		const n8nDb = new pg.Client({ connectionString: n8n.database.url });
		await n8nDb.connect();
		cleanups.push(() => n8nDb.end());

		const steps = [];
		/** Runs the Manual Trigger payment workflow once and prints which output Charge Payment took. */
		const runPayment = async (label, expected, workflowId = WORKFLOW_ID) => {
			const before = postCount();
			const r = await n8n.execute(workflowId);
			const chargeOut = outputsTaken(r, CHARGE).map((i) => CHARGE_OUTPUTS[i]);
			const sent = postCount() - before;
			steps.push({ label, expected, got: chargeOut.join(', ') || undefined });
			console.log(`\n   ${bold(label)}  (n8n execute: ${secs(r.__ms ?? 0)})`);
			info(`  Charge Payment (Guarded HTTP Request) → ${chargeOut.join(', ') || '(no output)'}; sent ${sent} request(s) to the provider`);
			const item = outputItems(r, CHARGE)?.flat()[0];
			if (item?.ledger) {
				const l = item.ledger;
				info(`  ledger: key ${l.operationKey}, status ${l.status}, attempt ${l.attempt}${l.externalRef ? `, external ref ${l.externalRef}` : ''}${l.replay ? ', replay' : ''}${l.sent ? ', sent now' : ', not sent'}`);
			}
			info(`  path: ${nodesRun(r).join(' → ')}`);
		};

		step(`4. Replay and conflict: the workflow three times for ${REPLAY.orderId}`);
		await runPayment('Run 1: charge 4200 EUR', 'Succeeded');
		await runPayment('Run 2: the same again (a retry, a resent webhook...)', 'Done Before');
		await n8n.importWorkflow(manualPaymentWorkflow(api.url, { amount: 9900 }));
		await runPayment('Run 3: same order key, but 9900 EUR', 'Conflict');

		step(`5. The crash window: n8n dies after the provider charged ${CRASH.orderId}, before the ledger recorded it`);
		const tCrash = Date.now();
		// The provider commits the next charge and then holds its answer until the client goes away:
		// Charge Payment is still waiting for it when n8n is killed, whatever the machine's speed.
		api.setMode(['commit-then-hang']);
		const res = await fetch(`${main.url}/webhook/${CRASH_PATH}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(crashOrder),
			signal: AbortSignal.timeout(30_000),
		});
		await res.arrayBuffer();
		if (res.status !== 200) throw new Error(`POST /webhook/${CRASH_PATH} answered ${res.status}\n${n8n.logTail(40)}`);
		info(`POST ${main.url}/webhook/${CRASH_PATH} for ${CRASH.orderId}, 1500 EUR: n8n (pid ${main.pid}) runs the payment workflow`);
		const committed = await api.committed((p) => p.customerId === CRASH.customerId, 60_000);
		info(`The provider committed payment ${committed.id} (Idempotency-Key ${committed.idempotencyKey}) and holds its answer`);
		const beforeKill = await ledgerRow(CRASH.orderId);
		steps.push({ label: 'crash: the ledger row when n8n dies', expected: 'reserved', got: beforeKill?.status });
		info(`Ledger: status ${beforeKill?.status}, lease until ${beforeKill?.lease_expires_at?.toISOString()}: Charge Payment has not recorded the answer`);
		const { rows: running } = await n8nDb.query(`SELECT id, status FROM execution_entity WHERE "workflowId" = $1 ORDER BY id DESC LIMIT 1`, [CRASH_ID]);
		const killedPid = main.pid;
		await main.kill();
		api.setMode('succeed');
		info(`kill -9 of n8n's process group (pid ${killedPid}) while execution ${running[0]?.id ?? '?'} was ${running[0]?.status ?? '?'}`);

		t = Date.now();
		main = await n8n.start();
		info(`n8n restarted: pid ${main.pid} (${secs(Date.now() - t)})`);
		const dead = await pollUntil(
			async () => {
				const { rows } = await n8nDb.query(`SELECT id, status FROM execution_entity WHERE "workflowId" = $1 ORDER BY id DESC LIMIT 1`, [CRASH_ID]);
				return rows[0] && !['new', 'running', 'waiting'].includes(rows[0].status) && rows[0];
			},
			{ what: 'n8n to mark the killed execution finished', timeoutMs: 180_000, intervalMs: 500 },
		);
		info(`n8n marked the killed execution ${dead.id} "${dead.status}"; payments at the provider for ${CRASH.orderId}: ${api.payments().filter((p) => p.customerId === CRASH.customerId).length}`);
		// Without a reserved row there is no lease to wait for: the story already failed (see the outcomes).
		if (beforeKill?.status === 'reserved') {
			await pollUntil(
				async () =>
					(await client.query(`SELECT lease_expires_at <= "${schema}".ledger_now() AS over FROM "${schema}".operations WHERE operation_key = $1`, [operationKeyOf(CRASH.orderId)]))
						.rows[0]?.over,
				{ what: `the lease on ${CRASH.orderId} to run out`, timeoutMs: (CRASH_LEASE_SECONDS + 60) * 1000 },
			);
			info(`The lease (${CRASH_LEASE_SECONDS} s here; the example's default is 300 s) ran out without a confirmation`);
		}

		await runPayment(`Retry 1: the operator runs the payment for ${CRASH.orderId} again`, 'Reconcile', RETRY_ID);
		const afterRetry = await ledgerRow(CRASH.orderId);
		steps.push({ label: 'crash: the ledger row after the retry', expected: 'unknown', got: afterRetry?.status });
		info(`  the operation is ${afterRetry?.status}${afterRetry?.status === 'unknown' ? ': it may have been charged, so nothing is sent until the provider is asked' : ''}`);

		if (afterRetry?.status === 'unknown') {
			await pollUntil(
				async () =>
					(await client.query(`SELECT settle_until <= "${schema}".ledger_now() AS due FROM "${schema}".operations WHERE operation_key = $1`, [operationKeyOf(CRASH.orderId)]))
						.rows[0]?.due,
				{ what: `the settle window of ${CRASH.orderId} to end`, timeoutMs: (CRASH_SETTLE_SECONDS + 60) * 1000 },
			);
		}

		const lookupsBefore = api.requests().filter((q) => q.method === 'GET').length;
		const rec = await n8n.execute(RECONCILE_ID);
		const resolved = outputTargets(reconcileWf, RESOLVE, outputsTaken(rec, RESOLVE));
		steps.push({ label: 'crash: the reconcile workflow', expected: 'Recorded as Paid', got: resolved.join(', ') || undefined });
		console.log(`\n   ${bold(`Reconcile: the settle window (${CRASH_SETTLE_SECONDS} s here) ended; n8n execute of "Reconcile payments"`)}  (${secs(rec.__ms ?? 0)})`);
		info(`  Resolve Payments → ${resolved.join(', ') || '(no output)'}; ${api.requests().filter((q) => q.method === 'GET').length - lookupsBefore} lookup(s) at the provider`);
		info(`  path: ${nodesRun(rec).join(' → ')}`);
		const afterReconcile = await ledgerRow(CRASH.orderId);
		info(`  ledger: status ${afterReconcile?.status}, external ref ${afterReconcile?.external_ref ?? '(none)'}`);

		await runPayment(`Retry 2: the operator runs the payment for ${CRASH.orderId} once more`, 'Done Before', RETRY_ID);
		info(`(the crash window took ${secs(Date.now() - tCrash)})`);

		step('6. What happened');
		const payments = api.payments();
		console.log(`\n   ${bold(`Payments at the provider: ${payments.length}`)}`);
		for (const l of table(payments, ['id', 'amount', 'currency', 'customerId', 'idempotencyKey', 'createdAt'])) info(l);
		const posts = api.requests().filter((q) => q.method === 'POST');
		info(`(the provider received ${posts.length} POST request(s) in all)`);

		const ops = await client.query(
			`SELECT operation_key, status, attempt, external_ref, idempotency_key, updated_at FROM "${schema}".operations ORDER BY created_at`,
		);
		console.log(`\n   ${bold('Ledger rows')} (${schema}.operations)`);
		for (const l of table(ops.rows, ['operation_key', 'status', 'attempt', 'external_ref', 'idempotency_key'])) info(l);
		const events = await client.query(
			`SELECT event_id, operation_key, event, from_status, to_status, attempt, execution_id, node_name, created_at FROM "${schema}".operation_events ORDER BY event_id`,
		);
		console.log(`\n   ${bold('Event log')} (${schema}.operation_events, never pruned)`);
		for (const l of table(events.rows, ['event_id', 'operation_key', 'event', 'from_status', 'to_status', 'attempt', 'execution_id', 'node_name'])) info(l);

		const problems = storyProblems({ orders: DEMO_ORDERS, steps, payments, posts, ledger: ops.rows });
		holds = problems.length === 0;
		console.log(`\n   ${bold('Outcomes')}`);
		for (const x of steps) info(`${x.label} → ${x.got ?? '(nothing)'}`);
		console.log('');
		if (holds) {
			const idOf = (o) => payments.find((p) => p.customerId === o.customerId).id;
			console.log(
				bold(
					`RESULT: one payment per order key. ${REPLAY.orderId} (${idOf(REPLAY)}): the repeat was answered from the ledger without calling ` +
						`the provider, and the different amount under the same key was refused as a conflict. ${CRASH.orderId} (${idOf(CRASH)}): ` +
						'n8n died after the provider charged it; the retry sent nothing, the reconcile workflow found the payment, and the next retry answered Done Before.',
				),
			);
		} else {
			console.log(bold('RESULT: the story does NOT hold:'));
			for (const p of problems) info(p);
			info(`n8n log: ${n8n.logFile} (run with --keep to keep it)`);
		}
		if (keep) {
			info(`--keep: left n8n's folder ${n8n.root}, its database ${n8n.database.database} and schema ${schema} in place.`);
		} else {
			await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
		}
	} finally {
		step('Cleaning up');
		for (const f of cleanups.reverse()) {
			try {
				await f();
			} catch (e) {
				console.error(`   cleanup: ${e.message}`);
			}
		}
		info(`done in ${secs(Date.now() - t0)}`);
	}
	process.exitCode = holds ? 0 : 1;
}

main().catch((e) => {
	console.error(`\nThe demo failed: ${e.stack ?? e}`);
	process.exitCode = 1;
});
