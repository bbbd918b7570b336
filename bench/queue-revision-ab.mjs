// 12. Before and after, in one run: the queue's claim, enqueue and complete functions as they were at
// git revision REV (BENCH_AB_REV, default 71b452d: before the one-statement claim and
// enqueue) against the working tree's, on the same Postgres at the same time. Two
// throw-away schemas get this package's schema; in the "before" one, queue_claim, queue_enqueue and
// queue_complete are replaced by their text at REV (read with `git show` from this repository's own
// history; only these three files, so REV must have the same tables). Then, for each C consumers ×
// B batch size, both drain the same work, alternating, REPEAT times:
//   enqueue   T tasks of 3 groups in batches of 100 from one producer (tasks/s)
//   drain     C consumers claim up to B (5:2:1) and complete until all T are done (tasks/s)
//   claim / complete   median milliseconds per call, as the consumer saw them
// The machine's load moves absolute rates a lot; the ratio within one repetition is the figure.
import { execFileSync } from 'node:child_process';
import { dist, log, migrateSchema, now, pool, quick, randomSchema, repoRoot, round, summarize, writeResult, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const REV = process.env.BENCH_AB_REV || '71b452d';
const FILES = ['queue_claim', 'queue_enqueue', 'queue_complete'];
const GROUPS = ['high', 'normal', 'low'];
const WEIGHTS = [
	{ name: 'high', weight: 5 },
	{ name: 'normal', weight: 2 },
	{ name: 'low', weight: 1 },
];
const CONFIGS = [
	[1, 1],
	[4, 1],
	[10, 1],
	[1, 50],
	[4, 50],
	[10, 50],
];
const TASKS = { 1: quick ? 300 : 600, 50: quick ? 3000 : 6000 };
const REPEAT = quick ? 2 : 3;

const p = pool(14);
const schemas = { before: randomSchema('bench_ab_before'), after: randomSchema('bench_ab_after') };
for (const s of Object.values(schemas)) await migrateSchema(p, s);
{
	const c = await p.connect();
	try {
		await c.query(`SET search_path TO "${schemas.before}", pg_temp`);
		for (const f of FILES) await c.query(execFileSync('git', ['show', `${REV}:schema/functions/queue/${f}.sql`], { cwd: repoRoot, encoding: 'utf8' }));
		// The same rights and search_path as the migrator gives (SECURITY DEFINER entry points).
		await c.query(execFileSync('git', ['show', `${REV}:schema/security/function_security.sql`], { cwd: repoRoot, encoding: 'utf8' }));
	} finally {
		c.release();
	}
}
let seq = 0;

async function drain(schema, C, B, T) {
	const queue = `ab-${++seq}`;
	const t0 = now();
	for (let s = 0; s < T; s += 100) {
		const items = [];
		for (let i = s; i < Math.min(T, s + 100); i++) items.push({ queue, group: GROUPS[i % 3], payload: { i } });
		await Q.enqueue(p, ledgerSchemaOf(schema), items);
	}
	const t1 = now();
	const claimMs = [];
	const completeMs = [];
	let done = 0;
	await Promise.all(
		Array.from({ length: C }, async () => {
			for (;;) {
				let t = now();
				const tasks = await Q.dequeue(p, ledgerSchemaOf(schema), { queue, limit: B, leaseSeconds: 300, groups: WEIGHTS });
				claimMs.push(now() - t);
				if (tasks.length === 0) return;
				t = now();
				const res = await Q.complete(p, ledgerSchemaOf(schema), tasks.map((x) => ({ taskId: x.taskId, leaseToken: x.leaseToken })));
				completeMs.push(now() - t);
				done += res.filter((r) => r.outcome === 'completed').length;
			}
		}),
	);
	const t2 = now();
	if (done !== T) throw new Error(`${schema}: ${done} of ${T} completed`);
	return {
		enqueue: round((T / (t1 - t0)) * 1000, 0),
		drain: round((T / (t2 - t1)) * 1000, 0),
		claimMs: round(summarize(claimMs).median, 2),
		completeMs: round(summarize(completeMs).median, 2),
	};
}

for (const s of Object.values(schemas)) await drain(s, 2, 50, 600); // warm-up (plans, caches)
const rows = [];
for (const [C, B] of CONFIGS) {
	const runs = { before: [], after: [] };
	for (let r = 0; r < REPEAT; r++) {
		for (const name of r % 2 ? ['after', 'before'] : ['before', 'after']) runs[name].push(await drain(schemas[name], C, B, TASKS[B]));
	}
	const ratios = runs.after.map((a, i) => round(a.drain / runs.before[i].drain, 2));
	rows.push({ concurrency: C, batch: B, tasks: TASKS[B], before: runs.before, after: runs.after, drainRatios: ratios });
	log(
		`C=${C} B=${B}: drain before ${runs.before.map((x) => x.drain).join(' / ')}, after ${runs.after.map((x) => x.drain).join(' / ')} (after/before ${ratios.join(' / ')}); ` +
			`enqueue before ${runs.before.map((x) => x.enqueue).join(' / ')}, after ${runs.after.map((x) => x.enqueue).join(' / ')}`,
	);
}
for (const s of Object.values(schemas)) await p.query(`DROP SCHEMA "${s}" CASCADE`);
await p.end();
writeResult({ suite: 'queue-revision-ab', revision: REV, files: FILES, quick, rows });
