// `npm run bench`: every benchmark of BENCHMARKS.md, side by side on one Postgres, in one run.
//
//   node scripts/bench.mjs            full run (about 15 to 20 minutes on 2 cores)
//   node scripts/bench.mjs --quick    smaller counts, to try the harness (about 3 minutes)
//   node scripts/bench.mjs --only=ledger-throughput,pickup-latency
//
// Database: DATABASE_URL; else postgres://postgres@127.0.0.1:5432/test if it answers; else the
// embedded Postgres of scripts/lib/embedded-pg.mjs. Builds dist/ when it is missing, installs the
// peer queues (graphile-worker 0.17.3, pg-boss 10.4.2) from npm into bench/peers/ (git-ignored)
// when they are missing, runs each suite (bench/*.mjs) in its own Node process with --expose-gc,
// prints a table and writes bench/results/latest.json and bench/results/chart.svg.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { canConnect, startEmbeddedPostgres } from './lib/embedded-pg.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const resultsDir = path.join(root, 'bench', 'results');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const SUITES = ['ledger-throughput', 'ledger-scale', 'queue-throughput', 'pickup-latency', 'queue-scale', 'queue-aged-backlog', 'queue-drain', 'batch-scale', 'queue-notify', 'queue-long-txn', 'memory', 'ledger-retention', 'queue-fair-cost', 'queue-claim-bounds', 'queue-revision-ab', 'n8n-request-price', 'n8n-drain'];
const PEERS = { 'graphile-worker': '0.17.3', 'pg-boss': '10.4.2' };
const LOCAL_URL = 'postgres://postgres@127.0.0.1:5432/test';

const say = (m) => process.stderr.write(`[bench] ${m}\n`);
const redact = (url) => url.replace(/:[^:@/]+@/, ':***@');

async function database() {
	if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, source: 'DATABASE_URL', stop: async () => undefined };
	if (await canConnect(LOCAL_URL, 2000)) return { url: LOCAL_URL, source: 'local', stop: async () => undefined };
	const db = await startEmbeddedPostgres();
	return { url: db.url, source: 'embedded', stop: () => db.stop() };
}

function run(cmd, argv, opts = {}) {
	const r = spawnSync(cmd, argv, { cwd: root, stdio: 'inherit', ...opts });
	if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

function ensureBuilt() {
	const needed = ['nodes/ReserveOperation/ReserveOperation.node.js', 'nodes/ConfirmOperation/ConfirmOperation.node.js', 'nodes/PriorityDequeue/PriorityDequeue.node.js', 'nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node.js', 'src/queue/index.js', 'src/ledger/admin/retention.js', 'schema/functions/queue/queue_claim.sql'];
	if (needed.every((f) => existsSync(path.join(root, 'dist', f)))) return;
	say('dist/ is missing or incomplete: npm run build');
	run('npm', ['run', 'build']);
}

function peerVersion(name) {
	const pj = path.join(root, 'bench', 'peers', 'node_modules', name, 'package.json');
	return existsSync(pj) ? JSON.parse(readFileSync(pj, 'utf8')).version : undefined;
}

function ensurePeers() {
	const missing = Object.entries(PEERS).filter(([n, v]) => peerVersion(n) !== v);
	if (missing.length === 0) return;
	say(`installing ${missing.map(([n, v]) => `${n}@${v}`).join(', ')} into bench/peers/ (git-ignored)`);
	mkdirSync(path.join(root, 'bench', 'peers'), { recursive: true });
	run('npm', ['install', '--prefix', path.join(root, 'bench', 'peers'), '--no-save', '--no-package-lock', '--no-audit', '--no-fund', ...Object.entries(PEERS).map(([n, v]) => `${n}@${v}`)]);
}

const fmt = (x, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x >= 1000 ? Math.round(x).toLocaleString('en') : x.toFixed(d));

function table(headers, rows) {
	const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
	const line = (cells) => cells.map((c, i) => String(c).padEnd(w[i])).join('  ');
	return [line(headers), w.map((n) => '-'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}

function printTables(latest) {
	const s = latest.suites;
	const out = [];
	if (s['ledger-throughput']?.batches) {
		out.push('\nLedger throughput: Reserve + Confirm of one batch (ms: median / p90)');
		out.push(
			table(
				['items', 'nodes', 'direct SQL', 'per-item SQL', 'nodes/direct', 'per-item/nodes', 'nodes items/s'],
				s['ledger-throughput'].batches.map((b) => [
					b.n.toLocaleString('en'),
					`${fmt(b.nodeMs.median)} / ${fmt(b.nodeMs.p90)}`,
					`${fmt(b.directMs.median)} / ${fmt(b.directMs.p90)}`,
					`${fmt(b.perItemMs.median)} / ${fmt(b.perItemMs.p90)}`,
					fmt(b.nodeOverDirect),
					`${fmt(b.perItemOverNode, 1)}×`,
					fmt(b.nodeItemsPerSec, 0),
				]),
			),
		);
	}
	for (const [name, title] of [
		['ledger-scale', 'Ledger at scale: Reserve latency through the node'],
		['queue-scale', 'Queue at scale: claim latency'],
		['batch-scale', 'One call with many items: enqueue and Reserve'],
	]) {
		const x = s[name];
		if (!x?.rows) continue;
		out.push(`\n${title} (ms: median / p90)`);
		out.push(
			table(
				['', `${x.sizes[0].toLocaleString('en')} rows`, `${x.sizes[1].toLocaleString('en')} rows`, 'ratio'],
				x.rows.map((r) => [r.kind, `${fmt(r.small.median)} / ${fmt(r.small.p90)}`, `${fmt(r.large.median)} / ${fmt(r.large.p90)}`, fmt(r.ratio)]),
			),
		);
	}
	if (s['queue-aged-backlog']?.rows) {
		const x = s['queue-aged-backlog'];
		out.push(`\nQueue with a backlog older than the aging interval (${x.size.toLocaleString('en')} tasks per queue; ms: median / p90)`);
		out.push(
			table(
				['', 'young backlog', 'old backlog', 'ratio'],
				x.rows.map((r) => [r.kind, `${fmt(r.young.median)} / ${fmt(r.young.p90)}`, `${fmt(r.old.median)} / ${fmt(r.old.p90)}`, fmt(r.ratio)]),
			),
		);
		out.push(`Claims of one on the full path: young ${x.fullPathClaims.young} of ${x.fullPathClaims.of}, old ${x.fullPathClaims.old} of ${x.fullPathClaims.of}`);
	}
	if (s['queue-drain']?.points) {
		const x = s['queue-drain'];
		out.push(`\nQueue draining ${x.size.toLocaleString('en')} tasks between two VACUUMs (ms: median / p90)`);
		out.push(
			table(
				['claimed since VACUUM', 'claim 1', 'enqueue 1', 'tag index bytes'],
				x.points.map((p) => [p.claimedSinceVacuum.toLocaleString('en'), `${fmt(p.claimMs.median)} / ${fmt(p.claimMs.p90)}`, `${fmt(p.enqueueMs.median)} / ${fmt(p.enqueueMs.p90)}`, p.tagIndexBytes.toLocaleString('en')]),
			),
		);
	}
	if (s['queue-throughput']?.rows) {
		out.push('\nQueue throughput: enqueue → dequeue → complete (tasks/s; drain-only in brackets)');
		out.push(
			table(
				['consumers', 'batch', 'tasks', 'this package (5:2:1)', 'graphile-worker', 'pg-boss', 'ours/gw', 'fairness error'],
				s['queue-throughput'].rows.map((r) => [
					r.concurrency,
					r.batch,
					r.tasks.toLocaleString('en'),
					`${fmt(r.ours.tasksPerSec, 0)} (${fmt(r.ours.drainTasksPerSec, 0)})`,
					`${fmt(r['graphile-worker'].tasksPerSec, 0)} (${fmt(r['graphile-worker'].drainTasksPerSec, 0)})`,
					`${fmt(r['pg-boss'].tasksPerSec, 0)} (${fmt(r['pg-boss'].drainTasksPerSec, 0)})`,
					fmt(r.oursOverGraphile),
					`${fmt(r.ours.fairness.errorPctPoints, 2)} pp (max lag ${fmt(r.ours.fairness.maxLagTasks, 2)} tasks)`,
				]),
			),
		);
	}
	const pl = s['pickup-latency'];
	if (pl?.oursMs) {
		out.push('\nPickup latency, enqueue → start of work (ms)');
		out.push(
			table(
				['', 'p50', 'p90', 'p99', 'samples'],
				[
					['Priority Dequeue Trigger (LISTEN)', fmt(pl.oursMs.median), fmt(pl.oursMs.p90), fmt(pl.oursMs.p99), pl.oursMs.n],
					['graphile-worker runner', fmt(pl.graphileMs.median), fmt(pl.graphileMs.p90), fmt(pl.graphileMs.p99), pl.graphileMs.n],
					[`${pl.pollingMs.intervalSeconds} s polling loop (expected mean ${pl.pollingMs.expectedMeanMs})`, fmt(pl.pollingMs.median, 0), fmt(pl.pollingMs.p90, 0), fmt(pl.pollingMs.p99, 0), pl.pollingMs.n],
				],
			),
		);
	}
	const qn = s['queue-notify'];
	if (qn?.rows) {
		out.push(`\nMany single-task producers: ${qn.producers} producers, one task per transaction, ${qn.seconds} s each (pickup: enqueue call → claimed)`);
		out.push(
			table(
				['', 'commits/s', 'pickup p50 / p90 (ms)'],
				qn.rows.map((r) => [r.kind, fmt(r.commitsPerSec, 0), r.pickupUnderLoadMs ? `${fmt(r.pickupUnderLoadMs.p50, 0)} / ${fmt(r.pickupUnderLoadMs.p90, 0)}` : '']),
			),
		);
		out.push(`idle pickup p50 / p90 (ms): commit ${fmt(qn.idlePickupMs.commit.p50, 0)} / ${fmt(qn.idlePickupMs.commit.p90, 0)}, after ${fmt(qn.idlePickupMs.after.p50, 0)} / ${fmt(qn.idlePickupMs.after.p90, 0)}`);
	}
	const lt = s['queue-long-txn'];
	if (lt?.claimMs) {
		out.push(`\nLong transaction: REPEATABLE READ held ${lt.phaseSeconds.during} s at ${lt.ratePerSec} tasks/s (autovacuum ${lt.snapshots.before.autovacuumOn ? 'on' : 'OFF'})`);
		out.push(
			table(
				['phase', 'claim p50 / p90 (ms)', 'dead tuples at end'],
				['before', 'during', 'after', 'afterVacuum'].map((k) => [k, `${fmt(lt.claimMs[k].p50)} / ${fmt(lt.claimMs[k].p90)}`, fmt(lt.snapshots[k].deadTuples, 0)]),
			),
		);
	}
	if (s.memory?.rows) {
		out.push('\nMemory of one node execution with 10,000 items (MiB over a post-GC baseline)');
		out.push(table(['node', 'peak RSS Δ', 'peak heap Δ', 'retained heap Δ'], s.memory.rows.map((r) => [r.node, fmt(r.peakRssDeltaMiB, 1), fmt(r.peakHeapDeltaMiB, 1), fmt(r.retainedHeapDeltaMiB, 1)])));
	}
	const lr = s['ledger-retention'];
	if (lr?.sizes) {
		out.push(`\nLedger retention: compaction of ${lr.eligible.toLocaleString('en')} of ${lr.operations.toLocaleString('en')} operations (${fmt(lr.compaction.seconds, 1)} s)`);
		out.push(
			table(
				['', 'before', 'after compaction + VACUUM', 'after VACUUM FULL'],
				[
					['operations + events (MiB)', fmt(lr.sizes.before.totalMiB, 1), `${fmt(lr.sizes.afterVacuum.totalMiB, 1)} (${fmt(lr.reclaimedMiB.reusableAfterVacuum, 1)} reusable)`, fmt(lr.sizes.afterVacuumFull.totalMiB, 1)],
				],
			),
		);
		out.push(
			table(
				['Reserve (ms p50 / p99)', 'before', 'during compaction', 'after'],
				[
					['1 new key', `${fmt(lr.latency.before.reserve1.median)} / ${fmt(lr.latency.before.reserve1.p99)}`, `${fmt(lr.latency.during.reserve1.median)} / ${fmt(lr.latency.during.reserve1.p99)}`, `${fmt(lr.latency.after.reserve1.median)} / ${fmt(lr.latency.after.reserve1.p99)}`],
					['100 replays', `${fmt(lr.latency.before.replay100.median)} / ${fmt(lr.latency.before.replay100.p99)}`, '', `${fmt(lr.latency.after.replay100.median)} / ${fmt(lr.latency.after.replay100.p99)}`],
				],
			),
		);
	}
	const cb = s['queue-claim-bounds'];
	if (cb?.batches) {
		out.push('\nClaim latency and its bounds: plain statement vs BEGIN/SET LOCAL/COMMIT in 3 round trips vs the package (1 round trip), ms p50 / p99');
		out.push(
			table(
				['batch', 'plain', '3 trips', 'package'],
				Object.entries(cb.batches).map(([b, v]) => [b, ...['plain', '3 trips', 'package'].map((k) => `${fmt(v[k].p50)} / ${fmt(v[k].p99)}`)]),
			),
		);
	}
	const rp = s['n8n-request-price'];
	if (rp?.variants) {
		out.push('\nThe ledger\'s price in a request through a real n8n (webhook round trip, ms p50 / p99; extra = p50 over bare)');
		const rows = Object.entries(rp.variants).map(([v, x]) => [
			v,
			`${fmt(x.c1.median)} / ${fmt(x.c1.p99)}`,
			fmt(rp.extraMs_c1?.[v] ?? (v === 'bare' ? 0 : null)),
			`${fmt(x.c4.median)} / ${fmt(x.c4.p99)}`,
			fmt(rp.extraMs_c4?.[v] ?? (v === 'bare' ? 0 : null)),
		]);
		if (rows.length) out.push(table(['workflow', 'C = 1', 'extra', 'C = 4', 'extra'], rows));
	}
	for (const x of rp?.skipped ?? []) out.push(`n8n-request-price: skipped ${x.part}: ${x.reason}`);
	const dr = s['n8n-drain'];
	const drRows = Object.entries(dr?.modes ?? {}).flatMap(([mode, m]) =>
		Object.entries(m.variants).map(([v, x]) => [
			mode,
			v,
			fmt(x.drain.tasksPerSecond),
			`${fmt(x.paced.pickupMs.median)} / ${fmt(x.paced.pickupMs.p99)}`,
			fmt(x.drain.cpuMsPerTask.n8n),
			fmt(x.drain.cpuMsPerTask.postgres),
			fmt(x.drain.cpuMsPerTask.rabbitmq),
		]),
	);
	if (drRows.length) {
		out.push(`\nDraining ${dr.n} tasks through a real n8n (tasks/s; pickup of ${dr.pacedN} tasks sent ${dr.pacedRate}/s, ms p50 / p99; CPU ms per task)`);
		out.push(table(['mode', 'consumer', 'tasks/s', 'pickup', 'n8n CPU', 'Postgres CPU', 'RabbitMQ CPU'], drRows));
	}
	for (const x of dr?.skipped ?? []) out.push(`n8n-drain: skipped ${x.part}: ${x.reason}`);
	out.push('\nTargets');
	out.push(table(['target', 'value', 'limit', 'met'], latest.targets.map((t) => [t.what, fmt(t.value), t.limit, t.met ? 'met' : 'MISSED'])));
	return out.join('\n');
}

const t0 = Date.now();
ensureBuilt();
ensurePeers();
const db = await database();
say(`database: ${db.source} ${redact(db.url)}`);
mkdirSync(resultsDir, { recursive: true });
const suites = {};
try {
	for (const name of SUITES) {
		if (only && !only.includes(name)) continue;
		const out = path.join(resultsDir, `${name}.tmp.json`);
		rmSync(out, { force: true });
		const started = Date.now();
		say(`${name} ...`);
		const r = spawnSync(process.execPath, ['--expose-gc', path.join(root, 'bench', `${name}.mjs`)], {
			cwd: root,
			stdio: ['ignore', 'inherit', 'inherit'],
			env: { ...process.env, DATABASE_URL: db.url, BENCH_OUT: out, BENCH_SCALE: quick ? 'quick' : 'full' },
		});
		const seconds = Math.round((Date.now() - started) / 100) / 10;
		if (r.status === 0 && existsSync(out)) {
			suites[name] = { ...JSON.parse(readFileSync(out, 'utf8')), seconds };
			rmSync(out, { force: true });
		} else {
			suites[name] = { error: `exit ${r.status ?? r.signal}`, seconds };
			say(`${name} FAILED (${suites[name].error})`);
		}
		say(`${name} done in ${seconds} s`);
	}
} finally {
	await db.stop();
}

const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const latest = {
	package: `${pkg.name}@${pkg.version}`,
	finishedAt: new Date().toISOString(),
	durationSeconds: Math.round((Date.now() - t0) / 1000),
	scale: quick ? 'quick' : 'full',
	machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${process.platform}-${process.arch}` },
	database: { source: db.source, server: suites['ledger-throughput']?.server },
	peers: Object.fromEntries(Object.keys(PEERS).map((n) => [n, peerVersion(n)])),
	suites,
	targets: Object.values(suites).flatMap((x) => x.targets ?? []),
};
const file = only ? path.join(resultsDir, 'partial.tmp.json') : path.join(resultsDir, 'latest.json');
writeFileSync(file, `${JSON.stringify(latest, null, 2)}\n`);
if (!only) {
	const { chartSvg } = await import('../bench/lib/chart.mjs');
	writeFileSync(path.join(resultsDir, 'chart.svg'), chartSvg(latest));
}
console.log(printTables(latest));
console.log(`\nwrote ${path.relative(root, file)}${only ? '' : ' and bench/results/chart.svg'} (${latest.durationSeconds} s)`);
const failed = Object.entries(suites).filter(([, v]) => v.error);
process.exit(failed.length ? 1 : 0);
