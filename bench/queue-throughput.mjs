// 3. Queue throughput, this package against graphile-worker 0.17.3 and pg-boss 10.4.2, on the same
// database in the same run. One run of a system with C consumers and batch size B:
//   enqueue  T tasks in batches of 100 from one producer (timed: the enqueue phase);
//   drain    C consumers each claim up to B tasks, run a no-op handler, complete them, until all
//            T are complete (timed from the first claim to the last completion: the drain phase).
// Throughput = T / (enqueue + drain). Ours claims with 5:2:1 weighted fairness over three groups
// (high, normal, low; T/3 tasks each); its fairness error is computed from the claim sequence over
// the window in which every group still had work. Ours runs two ways:
//   ours           the Priority Dequeue Trigger's way with Settle Tasks "When the Execution
//                  Finishes": each consumer completes its finished batch in the transaction that
//                  claims its next one (completeAndDequeue: one round trip, one commit per batch);
//                  the target is judged on this one.
//   ours-separate  a claim and a Complete of their own per batch (two transactions), as a workflow
//                  with the Priority Dequeue node's Claim and Complete operations does.
//   graphile-worker: run({ concurrency: C }); B = 50 → preset.worker.localQueue.size = 50 and
//                    completeJobBatchDelay = 0 (its batched fetch and batched completion).
//   pg-boss:         C loops of fetch(name, { batchSize: B }) + complete(name, ids). (Its work() API
//                    sleeps the polling interval, at least 0.5 s, after every fetch; a tight
//                    fetch/complete loop is the fastest way to drive it.)
import { dist, log, migrateSchema, now, pool, quick, randomSchema, round, summarize, writeResult, DATABASE_URL, sleep, ledgerSchemaOf } from './lib/common.mjs';
import { loadGraphileWorker, loadPgBoss, quietGraphileLogger, installedVersion } from './lib/peers.mjs';
import { applyPatches } from './lib/patches.mjs';

const Q = dist('src/queue/index.js');
const { closeAllPools } = dist('src/db/pool.js');

const CONCURRENCY = [1, 4, 10];
const BATCH = [1, 50];
const TASKS = quick ? { 1: 300, 50: 3000 } : { 1: 1500, 50: 15000 };
const REPEAT = quick ? 1 : 2;
const ENQUEUE_BATCH = 100;
const GROUPS = ['high', 'normal', 'low'];
const WEIGHTS = { high: 5, normal: 2, low: 1 };

// ---------------------------------------------------------------- ours
const ourSchema = randomSchema('bench_queue');
const ourPool = pool(14);
await migrateSchema(ourPool, ourSchema);
// Off unless BENCH_PATCH names an experiment (see bench/lib/patches.mjs); reported in the result.
const patches = await applyPatches(ourPool, ourSchema);
if (patches.length) log(`experiment: ${patches.join(', ')} applied to this run's own schema`);
let qseq = 0;

async function runOurs(C, B, T, separate = false) {
	const queue = `bench-${++qseq}`;
	const t0 = now();
	for (let s = 0; s < T; s += ENQUEUE_BATCH) {
		const batch = [];
		for (let i = s; i < Math.min(T, s + ENQUEUE_BATCH); i++) batch.push({ queue, group: GROUPS[i % 3], payload: { n: i } });
		await Q.enqueue(ourPool, ledgerSchemaOf(ourSchema), batch);
	}
	const t1 = now();
	const claims = [];
	let done = 0;
	const S = ledgerSchemaOf(ourSchema);
	const options = { queue, limit: B, leaseSeconds: 300 };
	const consumer = separate
		? async () => {
				for (;;) {
					const tasks = await Q.dequeue(ourPool, S, options);
					if (tasks.length === 0) return;
					for (const t of tasks) claims.push([Number(t.claimSeq), t.group]);
					const res = await Q.complete(ourPool, S, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
					done += res.filter((r) => r.outcome === 'completed').length;
				}
			}
		: async () => {
				// The trigger's way with Settle Tasks "When the Execution Finishes": the finished
				// batch is completed in the transaction that claims the next one.
				let held = [];
				for (;;) {
					const { completed, tasks, claimError } = await Q.completeAndDequeue(ourPool, S, held, options);
					if (claimError) throw claimError;
					done += completed.filter((r) => r.outcome === 'completed').length;
					if (tasks.length === 0) return;
					for (const t of tasks) claims.push([Number(t.claimSeq), t.group]);
					held = tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken }));
				}
			};
	await Promise.all(Array.from({ length: C }, consumer));
	const t2 = now();
	if (done !== T) throw new Error(`ours: ${done} of ${T} completed`);
	return { enqueueMs: t1 - t0, drainMs: t2 - t1, totalMs: t2 - t0, fairness: fairness(claims, T / 3) };
}

/** Observed shares vs the 5:2:1 weights over the claims made while every group had work. */
function fairness(claims, perGroup) {
	claims.sort((a, b) => a[0] - b[0]);
	const total = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
	const count = { high: 0, normal: 0, low: 0 };
	let window = 0;
	let maxDev = 0;
	for (const [, g] of claims) {
		if (Object.values(count).some((c) => c >= perGroup)) break;
		count[g]++;
		window++;
		for (const k of GROUPS) maxDev = Math.max(maxDev, Math.abs(count[k] - (window * WEIGHTS[k]) / total));
	}
	const shares = Object.fromEntries(GROUPS.map((k) => [k, round(count[k] / window, 4)]));
	const errorPct = Math.max(...GROUPS.map((k) => Math.abs(count[k] / window - WEIGHTS[k] / total))) * 100;
	return { window, shares, expected: Object.fromEntries(GROUPS.map((k) => [k, round(WEIGHTS[k] / total, 4)])), errorPctPoints: round(errorPct, 3), maxLagTasks: round(maxDev, 2) };
}

// ---------------------------------------------------------------- graphile-worker
const gw = loadGraphileWorker();
const gwSchema = randomSchema('bench_gw');
const gwLogger = quietGraphileLogger(gw);
const gwUtils = await gw.makeWorkerUtils({ connectionString: DATABASE_URL, logger: gwLogger, schema: gwSchema });
await gwUtils.migrate();

async function runGraphile(C, B, T) {
	const identifier = `bench_${++qseq}`;
	const t0 = now();
	for (let s = 0; s < T; s += ENQUEUE_BATCH) {
		const specs = [];
		for (let i = s; i < Math.min(T, s + ENQUEUE_BATCH); i++) specs.push({ identifier, payload: { n: i } });
		await gwUtils.addJobs(specs);
	}
	const t1 = now();
	let started = 0;
	let firstStart;
	let allStarted;
	const allStartedP = new Promise((r) => (allStarted = r));
	const worker = { schema: gwSchema };
	if (B > 1) Object.assign(worker, { localQueue: { size: B }, completeJobBatchDelay: 0 });
	const runner = await gw.run({
		connectionString: DATABASE_URL,
		concurrency: C,
		maxPoolSize: Math.max(10, C + 2),
		noHandleSignals: true,
		pollInterval: 1000,
		logger: gwLogger,
		taskList: {
			[identifier]: async () => {
				if (started === 0) firstStart = now();
				if (++started === T) allStarted();
			},
		},
		preset: { worker },
	});
	await allStartedP;
	// Completed = gone from the jobs table.
	for (;;) {
		const { rows } = await ourPool.query(`SELECT count(*)::int AS n FROM "${gwSchema}"._private_jobs`);
		if (rows[0].n === 0) break;
		await sleep(2);
	}
	const t2 = now();
	await runner.stop();
	return { enqueueMs: t1 - t0, drainMs: t2 - firstStart, totalMs: t1 - t0 + (t2 - firstStart) };
}

// ---------------------------------------------------------------- pg-boss
const PgBoss = loadPgBoss();
const pbSchema = randomSchema('bench_pgboss');
const boss = new PgBoss({ connectionString: DATABASE_URL, schema: pbSchema, max: 14, supervise: false, schedule: false });
boss.on('error', (e) => log(`pg-boss error: ${e.message}`));
await boss.start();

async function runPgBoss(C, B, T) {
	const name = `bench_${++qseq}`;
	await boss.createQueue(name);
	const t0 = now();
	for (let s = 0; s < T; s += ENQUEUE_BATCH) {
		const jobs = [];
		for (let i = s; i < Math.min(T, s + ENQUEUE_BATCH); i++) jobs.push({ name, data: { n: i } });
		await boss.insert(jobs);
	}
	const t1 = now();
	let done = 0;
	const consumer = async () => {
		for (;;) {
			const jobs = await boss.fetch(name, { batchSize: B });
			if (!jobs || jobs.length === 0) return;
			await boss.complete(
				name,
				jobs.map((j) => j.id),
			);
			done += jobs.length;
		}
	};
	await Promise.all(Array.from({ length: C }, consumer));
	const t2 = now();
	if (done !== T) throw new Error(`pg-boss: ${done} of ${T} completed`);
	return { enqueueMs: t1 - t0, drainMs: t2 - t1, totalMs: t2 - t0 };
}

// ---------------------------------------------------------------- the run
const systems = {
	ours: (C, B, T) => runOurs(C, B, T),
	'ours-separate': (C, B, T) => runOurs(C, B, T, true),
	'graphile-worker': runGraphile,
	'pg-boss': runPgBoss,
};
log('warming up');
for (const run of Object.values(systems)) await run(2, 50, 600);

const rows = [];
for (const B of BATCH) {
	for (const C of CONCURRENCY) {
		const T = TASKS[B];
		const per = Object.fromEntries(Object.keys(systems).map((k) => [k, []]));
		const names = Object.keys(systems);
		for (let r = 0; r < REPEAT; r++) {
			const order = names.map((_, i) => names[(i + r + C) % names.length]);
			for (const name of order) per[name].push(await systems[name](C, B, T));
		}
		const row = { concurrency: C, batch: B, tasks: T, repeat: REPEAT };
		for (const [name, runs] of Object.entries(per)) {
			const total = summarize(runs.map((x) => x.totalMs)).median;
			row[name] = {
				tasksPerSec: round((T / total) * 1000, 0),
				drainTasksPerSec: round((T / summarize(runs.map((x) => x.drainMs)).median) * 1000, 0),
				enqueueTasksPerSec: round((T / summarize(runs.map((x) => x.enqueueMs)).median) * 1000, 0),
				totalMs: round(total, 1),
			};
			if (name === 'ours' || name === 'ours-separate') {
				const worst = runs.map((x) => x.fairness).sort((a, b) => b.errorPctPoints - a.errorPctPoints)[0];
				row[name].fairness = worst;
			}
		}
		row.oursOverGraphile = round(row.ours.tasksPerSec / row['graphile-worker'].tasksPerSec, 2);
		row.oursSeparateOverGraphile = round(row['ours-separate'].tasksPerSec / row['graphile-worker'].tasksPerSec, 2);
		row.oursOverPgBoss = round(row.ours.tasksPerSec / row['pg-boss'].tasksPerSec, 2);
		rows.push(row);
		log(
			`C=${C} B=${B} T=${T}: ours ${row.ours.tasksPerSec}/s (drain ${row.ours.drainTasksPerSec}/s, fairness error ${row.ours.fairness.errorPctPoints} pp), ` +
				`separate calls ${row['ours-separate'].tasksPerSec}/s, graphile-worker ${row['graphile-worker'].tasksPerSec}/s (drain ${row['graphile-worker'].drainTasksPerSec}/s), pg-boss ${row['pg-boss'].tasksPerSec}/s; ours/gw ${row.oursOverGraphile} (separate ${row.oursSeparateOverGraphile})`,
		);
	}
}

const missed = rows.filter((r) => r.oursOverGraphile < 1);
const result = {
	suite: 'queue-throughput',
	peers: { 'graphile-worker': installedVersion('graphile-worker'), 'pg-boss': installedVersion('pg-boss') },
	tasks: TASKS,
	patches,
	enqueueBatch: ENQUEUE_BATCH,
	rows,
	targets: [
		{
			id: 'queue-vs-graphile',
			what: 'Throughput (enqueue → dequeue → complete, the complete riding on the next claim) ≥ graphile-worker at the same concurrency and batch size, 5:2:1 fairness on',
			value: Math.min(...rows.map((r) => r.oursOverGraphile)),
			limit: 1,
			met: missed.length === 0,
			detail: missed.map((r) => `C=${r.concurrency} B=${r.batch}: ${r.oursOverGraphile}×`),
		},
	],
};
await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
await gwUtils.release();
await ourPool.query(`DROP SCHEMA "${ourSchema}" CASCADE`);
await ourPool.query(`DROP SCHEMA "${gwSchema}" CASCADE`);
await ourPool.query(`DROP SCHEMA "${pbSchema}" CASCADE`);
await ourPool.end();
await closeAllPools();
writeResult(result);
