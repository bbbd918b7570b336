// The ledger's price in a request, through a real n8n (scripts/lib/n8n.mjs, regular mode): the
// latency a webhook caller sees for four workflows that all call the same local HTTP target
// (127.0.0.1, answers {id} at once) and answer with Respond to Webhook:
//   bare    - Webhook -> HTTP Request -> Respond
//   noop    - Webhook -> Set -> HTTP Request -> Set -> Respond (n8n's own cost of two nodes)
//   ledger  - Webhook -> Reserve Operation -> HTTP Request -> Confirm Operation -> Respond
//   postgres- Webhook -> Postgres (INSERT ... ON CONFLICT DO NOTHING) -> HTTP Request ->
//             Postgres (UPDATE) -> Respond: the pattern a user builds without the package
// Each request carries a new id (a new operation key). Rounds interleave the variants in a
// rotating order; each round sends ROUND requests per variant one at a time (concurrency 1), then
// 4 parallel loops of ROUND requests (concurrency 4). Reported: p50/p90/p99 per variant and
// concurrency, and the medians of the per-round p50s with their spread (min..max).
//
// BENCH_PROFILE=1 (or --profile): afterwards, n8n is restarted under `node --cpu-prof` and PROFILE_N
// ledger requests are sent; the profile is summarised (self and total time of the package's
// functions, pg's, and the top functions overall) into the result.
//
// A part that cannot run is skipped and named in the output (`skipped`): no n8n runtime (ensureN8n
// fails: offline, no cache), or the Postgres node variant when its credential/workflow fails.
import http from 'node:http';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DATABASE_URL, dist, log, now, pool, quick, randomSchema, round, summarize, writeResult } from './lib/common.mjs';
import { importAndPublish, ledgerCredential, link, postgresCredential, setNode as addedField, workflowBuilder } from './lib/n8n-bench.mjs';

const args = process.argv.slice(2);
const PROFILE = args.includes('--profile') || process.env.BENCH_PROFILE === '1';
const ROUNDS = Number(process.env.PRICE_ROUNDS ?? (quick ? 4 : 12));
const ROUND = Number(process.env.PRICE_ROUND ?? (quick ? 15 : 25));
const WARMUP = quick ? 20 : 40;
const PROFILE_N = Number(process.env.PRICE_PROFILE_N ?? 300);
const VARIANTS = (process.env.PRICE_VARIANTS ?? 'bare,noop,ledger,postgres').split(',');

const skipped = [];
const result = { suite: 'n8n-request-price', rounds: ROUNDS, perRound: ROUND, variants: {}, skipped, targets: [] };

let harness;
try {
	harness = await import('../scripts/lib/n8n.mjs');
} catch (e) {
	finishSkipped(`the n8n harness could not be loaded: ${e.message}`);
}

function finishSkipped(reason) {
	log(`SKIPPED: ${reason}`);
	skipped.push({ part: 'all', reason });
	writeResult(result);
	process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// The HTTP target: loopback only, answers each request at once with a fresh reference.
let served = 0;
const target = http.createServer((req, res) => {
	req.resume();
	req.on('end', () => {
		served++;
		const body = JSON.stringify({ id: `ref_${served}` });
		res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
		res.end(body);
	});
});
await new Promise((r) => target.listen(0, '127.0.0.1', r));
const targetUrl = `http://127.0.0.1:${target.address().port}/pay`;

// ---------------------------------------------------------------------------------------------
// Workflows
const { CONFIRM_OUTPUTS, RESERVE_OUTPUTS } = dist('src/ledger/states.js');
const bodyId = "{{ $('Webhook').item.json.body.id }}";
let node;
const webhook = (v) => node('Webhook', 'n8n-nodes-base.webhook', 2, { httpMethod: 'POST', path: `price-${v}`, responseMode: 'responseNode', options: {} }, { webhookId: randomUUID() });
const httpNode = () => node('Call Target', 'n8n-nodes-base.httpRequest', 4.2, { method: 'POST', url: `=${targetUrl}?id=${bodyId}`, options: {} });
const respond = () => node('Respond', 'n8n-nodes-base.respondToWebhook', 1.1, { respondWith: 'firstIncomingItem', options: {} });
const setNode = (name) => addedField(node, name, { step: ['string', name] });
const ledgerCred = { operationLedgerPostgresApi: { id: 'ledger-pg', name: 'Ledger' } };
const pgCred = { postgres: { id: 'plain-pg', name: 'Plain Postgres' } };

function workflow(v) {
	({ node } = workflowBuilder());
	let nodes;
	let connections;
	if (v === 'bare') {
		nodes = [webhook(v), httpNode(), respond()];
		connections = link('Webhook', 'Call Target', 'Respond');
	} else if (v === 'noop') {
		nodes = [webhook(v), setNode('Before'), httpNode(), setNode('After'), respond()];
		connections = link('Webhook', 'Before', 'Call Target', 'After', 'Respond');
	} else if (v === 'ledger') {
		nodes = [
			webhook(v),
			node(
				'Reserve',
				'n8n-nodes-operation-ledger.reserveOperation',
				1,
				{ keyMode: 'parts', resource: 'bench', action: 'price', entity: "={{ $json.body.id }}", version: 'v1', requestSource: 'custom', request: '={{ { id: $json.body.id } }}', target: 'bench-target', leaseSeconds: 60 },
				{ credentials: ledgerCred },
			),
			httpNode(),
			node('Confirm', 'n8n-nodes-operation-ledger.confirmOperation', 1, { outcomeSource: 'httpResult', externalReference: '={{ $json.id }}', lineage: 'auto', options: {} }, { credentials: ledgerCred }),
			respond(),
		];
		const toRespond = { node: 'Respond', type: 'main', index: 0 };
		connections = {
			Webhook: { main: [[{ node: 'Reserve', type: 'main', index: 0 }]] },
			// Proceed (output 1) calls the target; every other output answers at once (and fails the check below).
			Reserve: { main: Array.from({ length: 1 + RESERVE_OUTPUTS.length }, (_, i) => (i === 1 ? [{ node: 'Call Target', type: 'main', index: 0 }] : [toRespond])) },
			'Call Target': { main: [[{ node: 'Confirm', type: 'main', index: 0 }]] },
			Confirm: { main: Array.from({ length: 1 + CONFIRM_OUTPUTS.length }, () => [toRespond]) },
		};
	} else {
		const q = (name, query, replacement) => node(name, 'n8n-nodes-base.postgres', 2.5, { operation: 'executeQuery', query, options: { queryReplacement: replacement } }, { credentials: pgCred });
		nodes = [
			webhook(v),
			q('Insert Intent', `INSERT INTO ${pgTable} (key, status) VALUES ($1, 'reserved') ON CONFLICT (key) DO NOTHING RETURNING key`, `=${bodyId}`),
			httpNode(),
			q('Record Outcome', `UPDATE ${pgTable} SET status = 'succeeded', ref = $2, updated_at = now() WHERE key = $1 RETURNING status`, `=${bodyId},{{ $json.id }}`),
			respond(),
		];
		connections = link('Webhook', 'Insert Intent', 'Call Target', 'Record Outcome', 'Respond');
	}
	return { id: `price-${v}`, name: `Request price: ${v}`, nodes, connections, settings: { executionOrder: 'v1', saveDataSuccessExecution: 'all' }, active: false };
}

// ---------------------------------------------------------------------------------------------
// Setup: the ledger schema and the hand-built table on the benchmark database, then n8n.
const schema = randomSchema('bench_price');
const pgTable = `${schema}_plain.intents`;
const db = pool(2);
await db.query(`CREATE SCHEMA "${schema}_plain"`);
await db.query(`CREATE TABLE ${pgTable} (key text PRIMARY KEY, status text NOT NULL, ref text, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz)`);

let rt;
try {
	rt = await harness.ensureN8n();
} catch (e) {
	await cleanupDb();
	target.close();
	finishSkipped(`no n8n runtime (${String(e.message).split('\n')[0]})`);
}
log(`n8n ${rt.version ?? ''} at ${rt.n8nBin}`);
const tarball = await harness.packPackage({ build: process.env.PRICE_NO_BUILD !== '1' });
const n8n = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, tarball, extraEnv: { EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none', EXECUTIONS_DATA_SAVE_ON_ERROR: 'all', N8N_LOG_LEVEL: 'warn' } });
result.n8n = { version: harness.N8N_VERSION, node: harness.NODE_VERSION };

async function cleanupDb() {
	await db.query(`DROP SCHEMA IF EXISTS "${schema}_plain" CASCADE`).catch(() => undefined);
	await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
	await db.end().catch(() => undefined);
}

let variants = [...VARIANTS];
try {
	await n8n.importCredentials([ledgerCredential(DATABASE_URL, schema), postgresCredential(DATABASE_URL)]);
	const published = await importAndPublish(n8n, variants.map(workflow), skipped, log, (wf) => wf.id.replace(/^price-/, ''));
	variants = variants.filter((v) => published.includes(`price-${v}`));

	const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
	let seq = 0;
	const post = (v) =>
		new Promise((resolve, reject) => {
			const body = JSON.stringify({ id: `${v}-${process.pid}-${++seq}-${Date.now()}` });
			const t0 = now();
			const req = http.request(
				`${n8n.url}/webhook/price-${v}`,
				{ method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, timeout: 30_000 },
				(res) => {
					const chunks = [];
					res.on('data', (c) => chunks.push(c));
					res.on('end', () => resolve({ ms: now() - t0, status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
				},
			);
			req.on('timeout', () => req.destroy(new Error('timeout')));
			req.on('error', reject);
			req.end(body);
		});
	/** Checks that a variant did its work: 200, and for the ledger the operation recorded as succeeded. */
	const check = (v, r) => {
		if (r.status !== 200) throw new Error(`${v}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
		if (v === 'ledger') {
			const j = JSON.parse(r.body);
			if (j?.ledger?.status !== 'succeeded') throw new Error(`ledger: the operation was not recorded as succeeded: ${r.body.slice(0, 400)}`);
		}
		if (v === 'postgres' && JSON.parse(r.body)?.status !== 'succeeded') throw new Error(`postgres: the UPDATE did not answer: ${r.body.slice(0, 300)}`);
	};

	const startN8n = async (env = {}) => {
		await n8n.start({ env });
		await n8n.waitForWebhooks(variants.map((v) => ({ path: `price-${v}` })));
		for (const v of [...variants]) {
			try {
				for (let i = 0; i < WARMUP; i++) check(v, await post(v));
			} catch (e) {
				skipped.push({ part: v, reason: `its requests fail: ${String(e.message).split('\n')[0]}` });
				log(`SKIPPED variant ${v}: ${e.message}`);
				variants = variants.filter((x) => x !== v);
			}
		}
	};
	await startN8n();

	const samples = Object.fromEntries(variants.map((v) => [v, { c1: [], c4: [], roundP50c1: [], roundP50c4: [] }]));
	for (let r = 0; r < ROUNDS; r++) {
		const order = variants.map((_, i) => variants[(i + r) % variants.length]);
		for (const v of order) {
			const one = [];
			for (let i = 0; i < ROUND; i++) {
				const x = await post(v);
				check(v, x);
				one.push(x.ms);
			}
			samples[v].c1.push(...one);
			samples[v].roundP50c1.push(summarize(one).median);
		}
		for (const v of order) {
			const four = [];
			await Promise.all(
				Array.from({ length: 4 }, async () => {
					for (let i = 0; i < ROUND; i++) {
						const x = await post(v);
						check(v, x);
						four.push(x.ms);
					}
				}),
			);
			samples[v].c4.push(...four);
			samples[v].roundP50c4.push(summarize(four).median);
		}
		log(`round ${r + 1}/${ROUNDS}: c1 p50 ${variants.map((v) => `${v} ${round(samples[v].roundP50c1.at(-1), 2)}`).join(', ')}`);
	}
	for (const v of variants) {
		const s = samples[v];
		const spread = (a) => ({ median: round(summarize(a).median, 2), min: round(Math.min(...a), 2), max: round(Math.max(...a), 2) });
		result.variants[v] = {
			c1: Object.fromEntries(Object.entries(summarize(s.c1)).map(([k, x]) => [k, round(x, 2)])),
			c4: Object.fromEntries(Object.entries(summarize(s.c4)).map(([k, x]) => [k, round(x, 2)])),
			roundP50c1: spread(s.roundP50c1),
			roundP50c4: spread(s.roundP50c4),
		};
	}
	const p50 = (v, c) => result.variants[v]?.[c]?.median;
	if (p50('ledger', 'c1') && p50('bare', 'c1')) {
		for (const c of ['c1', 'c4']) {
			const extra = (v) => (p50(v, c) != null ? round(p50(v, c) - p50('bare', c), 2) : null);
			result[`extraMs_${c}`] = Object.fromEntries(variants.filter((v) => v !== 'bare').map((v) => [v, extra(v)]));
		}
		const led = result.extraMs_c1.ledger;
		if (result.extraMs_c1.postgres != null) result.targets.push({ what: 'Ledger nodes cost ≤ the hand-built Postgres pattern (extra p50 ms over bare, C = 1)', value: led, limit: `≤ ${result.extraMs_c1.postgres}`, met: led <= result.extraMs_c1.postgres });
		if (p50('noop', 'c1')) {
			const ratio = round(p50('ledger', 'c1') / p50('noop', 'c1'), 3);
			result.targets.push({ what: 'Request with the ledger nodes / with two no-op Set nodes (p50, C = 1)', value: ratio, limit: '≤ 1.1', met: ratio <= 1.1 });
		}
	}
	await n8n.stop();

	if (PROFILE) {
		// CPU of the n8n main process per request, by variant: the profile's samples are split by the
		// windows in which each variant's requests ran (V8's profile clock and process.hrtime are both
		// the monotonic clock), so n8n's start-up and the other variants are not counted. Unlike wall
		// time, this hardly moves with the load of other processes on the machine.
		const dir = mkdtempSync(path.join(os.tmpdir(), 'price-prof-'));
		await startN8n({ NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=250` });
		const windows = [];
		const per = Math.max(1, Math.floor(PROFILE_N / 10));
		for (let r = 0; r < 10; r++) {
			for (const v of variants.map((_, i) => variants[(i + r) % variants.length])) {
				const from = Number(process.hrtime.bigint() / 1000n);
				for (let i = 0; i < per; i++) check(v, await post(v));
				windows.push({ v, from, to: Number(process.hrtime.bigint() / 1000n) });
			}
		}
		await n8n.stop();
		const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')) : [];
		// The main process's profile is the largest one (task runners and helpers write their own).
		const biggest = files.map((f) => path.join(dir, f)).sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
		if (biggest) {
			const prof = JSON.parse(readFileSync(biggest, 'utf8'));
			result.profile = { requestsPerVariant: per * 10, file: biggest, variants: {} };
			for (const v of variants) result.profile.variants[v] = summariseProfile(prof, windows.filter((w) => w.v === v), per * 10);
		} else skipped.push({ part: 'profile', reason: `no .cpuprofile written to ${dir}` });
	}
} finally {
	await n8n.cleanup().catch(() => undefined);
	await cleanupDb();
	target.close();
}

/**
 * CPU time per request of the samples inside `windows` ({from, to}, µs of the monotonic clock) of a
 * V8 .cpuprofile: all but idle, the package's own functions (url in n8n-nodes-operation-ledger) by
 * self and total time, and the top 25 functions overall by self time.
 */
function summariseProfile(prof, windows, requests) {
	const byId = new Map(prof.nodes.map((n) => [n.id, n]));
	const dt = new Map();
	const deltas = prof.timeDeltas ?? [];
	// A sample's time is startTime plus the deltas so far; its weight is the interval up to the next sample.
	let t = prof.startTime;
	const inWindow = (x) => windows.some((w) => x >= w.from && x <= w.to);
	prof.samples.forEach((id, i) => {
		t += deltas[i] ?? 0;
		const weight = (deltas[i + 1] ?? 0) / 1000;
		if (inWindow(t)) dt.set(id, (dt.get(id) ?? 0) + weight);
	});
	const total = new Map();
	const walk = (n) => {
		let t = dt.get(n.id) ?? 0;
		for (const c of n.children ?? []) t += walk(byId.get(c));
		total.set(n.id, t);
		return t;
	};
	walk(prof.nodes[0]);
	const agg = new Map();
	const onStack = new Set();
	const visit = (n) => {
		const cf = n.callFrame;
		const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*node_modules\//, '')}:${cf.lineNumber + 1}`;
		const a = agg.get(key) ?? { self: 0, total: 0 };
		a.self += dt.get(n.id) ?? 0;
		if (!onStack.has(key)) a.total += total.get(n.id) ?? 0;
		agg.set(key, a);
		const added = !onStack.has(key);
		if (added) onStack.add(key);
		for (const c of n.children ?? []) visit(byId.get(c));
		if (added) onStack.delete(key);
	};
	visit(prof.nodes[0]);
	const per = (x) => round(x / requests, 3);
	const rows = [...agg].map(([k, a]) => ({ fn: k, selfMs: per(a.self), totalMs: per(a.total) }));
	const sum = (f) => per([...agg].filter(([k]) => f(k)).reduce((s, [, a]) => s + a.self, 0));
	return {
		cpuMsPerRequest: per([...dt.values()].reduce((a, b) => a + b, 0) - ([...agg].filter(([k]) => k.startsWith('(idle)')).reduce((s, [, a]) => s + a.self, 0))),
		selfMsPerRequest: { package: sum((k) => k.includes('n8n-nodes-operation-ledger')), pg: sum((k) => / pg(-pool|-protocol)?\//.test(k)), idle: sum((k) => k.startsWith('(idle)')), gc: sum((k) => k.startsWith('(garbage collector)')) },
		packageByTotal: rows.filter((r) => r.fn.includes('n8n-nodes-operation-ledger')).sort((a, b) => b.totalMs - a.totalMs).slice(0, 25),
		topSelf: rows.filter((r) => !r.fn.startsWith('(idle)')).sort((a, b) => b.selfMs - a.selfMs).slice(0, 25),
	};
}

for (const v of Object.keys(result.variants)) {
	const x = result.variants[v];
	log(`${v.padEnd(8)} C=1 p50 ${x.c1.median} p99 ${x.c1.p99} (round p50s ${x.roundP50c1.min}..${x.roundP50c1.max}) | C=4 p50 ${x.c4.median} p99 ${x.c4.p99}`);
}
if (result.extraMs_c1) log(`extra p50 over bare, C=1: ${JSON.stringify(result.extraMs_c1)}; C=4: ${JSON.stringify(result.extraMs_c4)}`);
for (const s of skipped) log(`skipped ${s.part}: ${s.reason}`);
if (result.profile) {
	for (const [v, x] of Object.entries(result.profile.variants)) {
		log(`profile ${v}: CPU ${x.cpuMsPerRequest} ms per request (package self ${x.selfMsPerRequest.package}, pg ${x.selfMsPerRequest.pg}, GC ${x.selfMsPerRequest.gc})`);
	}
	const led = result.profile.variants.ledger;
	if (led) log(`ledger top self:\n${led.topSelf.map((r) => `  ${r.selfMs} ${r.totalMs} ${r.fn}`).join('\n')}\n package by total:\n${led.packageByTotal.map((r) => `  ${r.selfMs} ${r.totalMs} ${r.fn}`).join('\n')}`);
}
writeResult(result);
process.exit(0);
