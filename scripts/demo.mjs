#!/usr/bin/env node
// `npm run demo`: the idempotent-payment story in a real n8n, for a person to watch.
//
//   1. A database: DATABASE_URL when set, otherwise an embedded Postgres (started here, in
//      .cache/embedded-pg; nothing to install or configure).
//   2. n8n 2.33.7 with Node 22 (or N8N_VERSION / N8N_NODE_VERSION; installed once into ~/.cache/n8n-nodes-operation-ledger; the first
//      time takes several minutes), this package built, packed and installed the way the Community
//      Nodes UI does, n8n started.
//   3. A fake payments provider on 127.0.0.1 (test/helpers/fakePaymentsApi.ts).
//   4. The example workflow workflows/idempotent-payment.json run three times for order-1001:
//      4200 EUR, 4200 EUR again, then 9900 EUR under the same order key.
//   5. What happened: which output each run took, the payments at the provider, the ledger row and
//      its event log. Exit status 1 when the story does not hold (not exactly one payment).
//
// Flags: --keep  leave the n8n folder, its database and the ledger schema in place afterwards.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getDatabase, repoRoot } from './lib/embedded-pg.mjs';
import { loadFakePaymentsApi } from './lib/fake-payments.mjs';
import { createN8nInstance, ensureN8n, nodesRun, outputItems, outputsTaken, packPackage } from './lib/n8n.mjs';

const keep = process.argv.includes('--keep');
const WORKFLOW_ID = 'idempotent-payment';
// Charge Payment is a Guarded HTTP Request (workflows/idempotent-payment.json): it reserves, sends
// and records in one node; output 0 is Unrecorded.
const CHARGE = 'Charge Payment';
const CHARGE_OUTPUTS = ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before', 'To Review'];

const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (s) => console.log(`\n${bold(`== ${s}`)}`);
const info = (s) => console.log(`   ${s}`);
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

function workflowFor(apiUrl, amount) {
	const wf = JSON.parse(readFileSync(path.join(repoRoot, 'workflows/idempotent-payment.json'), 'utf8'));
	wf.nodes.find((n) => n.name === CHARGE).parameters.url = `${apiUrl}/payments`;
	const input = wf.nodes.find((n) => n.name === 'Business Input');
	input.parameters.assignments.assignments.find((a) => a.name === 'amount').value = amount;
	return wf;
}

function table(rows, columns) {
	if (rows.length === 0) return ['(none)'];
	const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : r[c] instanceof Date ? r[c].toISOString() : String(r[c]))));
	const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
	const line = (vals) => vals.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd();
	return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
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

		t = Date.now();
		await n8n.importCredentials({
			id: 'ledger-pg',
			name: 'Operation Ledger Postgres account',
			type: 'operationLedgerPostgresApi',
			data: { connectionType: 'connectionString', connectionString: db.url, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 5 },
		});
		await n8n.importWorkflow(workflowFor(api.url, 4200));
		info(`Imported the credential "Operation Ledger Postgres account" and workflow "Idempotent payment" (${secs(Date.now() - t)})`);
		t = Date.now();
		const main = await n8n.start();
		info(`n8n started: ${main.url} (${secs(Date.now() - t)})`);

		step('4. Running the workflow three times for order-1001');
		const runs = [
			{ label: 'Run 1: charge 4200 EUR', amount: 4200 },
			{ label: 'Run 2: the same again (a retry, a resent webhook...)', amount: 4200 },
			{ label: 'Run 3: same order key, but 9900 EUR', amount: 9900 },
		];
		const taken = [];
		for (const run of runs) {
			if (run.amount !== 4200) await n8n.importWorkflow(workflowFor(api.url, run.amount));
			const before = api.requests().filter((q) => q.method === 'POST').length;
			const r = await n8n.execute(WORKFLOW_ID);
			const chargeOut = outputsTaken(r, CHARGE);
			const sent = api.requests().filter((q) => q.method === 'POST').length - before;
			taken.push({ charge: chargeOut.map((i) => CHARGE_OUTPUTS[i]) });
			console.log(`\n   ${bold(run.label)}  (n8n execute: ${secs(r.__ms ?? 0)})`);
			info(`  Charge Payment (Guarded HTTP Request) → ${chargeOut.map((i) => CHARGE_OUTPUTS[i]).join(', ') || '(no output)'}; sent ${sent} request(s) to the provider`);
			const item = outputItems(r, CHARGE)?.flat()[0];
			if (item?.ledger) {
				const l = item.ledger;
				info(`  ledger: key ${l.operationKey}, status ${l.status}, attempt ${l.attempt}${l.externalRef ? `, external ref ${l.externalRef}` : ''}${l.replay ? ', replay' : ''}${l.sent ? ', sent now' : ', not sent'}`);
			}
			info(`  path: ${nodesRun(r).join(' → ')}`);
		}

		step('5. What happened');
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
			`SELECT event_id, event, from_status, to_status, attempt, execution_id, node_name, created_at FROM "${schema}".operation_events ORDER BY event_id`,
		);
		console.log(`\n   ${bold('Event log')} (${schema}.operation_events, never pruned)`);
		for (const l of table(events.rows, ['event_id', 'event', 'from_status', 'to_status', 'attempt', 'execution_id', 'node_name', 'created_at'])) info(l);

		const expected = [{ charge: ['Succeeded'] }, { charge: ['Done Before'] }, { charge: ['Conflict'] }];
		const pathsOk = JSON.stringify(taken) === JSON.stringify(expected);
		const row = ops.rows[0];
		const ledgerOk = ops.rows.length === 1 && row.status === 'succeeded' && row.external_ref === payments[0]?.id;
		holds = payments.length === 1 && posts.length === 1 && pathsOk && ledgerOk;
		console.log(`\n   ${bold('Outputs taken')}`);
		taken.forEach((x, i) => info(`run ${i + 1}: Charge Payment → ${x.charge.join(', ')}`));
		console.log('');
		if (holds) {
			console.log(
				bold(
					`RESULT: one payment (${payments[0].id}) for three runs of the same operation. The repeat was answered from the ledger ` +
						'without calling the provider, and the different amount under the same key was refused as a conflict.',
				),
			);
		} else {
			console.log(bold('RESULT: the story does NOT hold:'));
			if (payments.length !== 1) info(`expected exactly 1 payment at the provider, found ${payments.length}`);
			if (posts.length !== 1) info(`expected exactly 1 POST to the provider, found ${posts.length}`);
			if (!pathsOk) info(`expected outputs ${JSON.stringify(expected)}, got ${JSON.stringify(taken)}`);
			if (!ledgerOk) info(`expected one succeeded ledger row with the provider's reference, got ${JSON.stringify(ops.rows)}`);
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
