// 11. The price of deciding fairness at enqueue: this design (start-time fair queuing tags
// written by enqueue, claims over (queue, vtag, id) with no shared row) beside the previous one
// (smooth weighted round robin in queue_claim over a per-queue scheduler row), on the same Postgres
// in the same run. The previous design is rebuilt in a throw-away schema of this run: the package's
// schema, then queue_enqueue and queue_claim as they were at git revision OLD_REV (read with
// `git show` from this repository's own history) and the two tag indexes dropped.
//   enqueue    tasks/s: 1 producer, batches of 100; 4 producers, batches of 1, one group; 4
//              producers, batches of 1, one group each (3 groups)
//   drain      tasks/s: C consumers (1, 4, 10) claiming B (1, 50) and completing, 5:2:1 over 3 groups
//   size       table and index bytes with N pending tasks
//   vacuum     VACUUM of queue_tasks after the drains (ms)
import { execFileSync } from 'node:child_process';
import { dist, log, migrateSchema, now, pool, quick, randomSchema, repoRoot, round, writeResult, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const OLD_REV = process.env.BENCH_OLD_REV || '9114843';
const GROUPS = ['high', 'normal', 'low'];
const N_BATCH = quick ? 6_000 : 30_000;
const N_SINGLE = quick ? 600 : 2_000;
const N_DRAIN = { 1: quick ? 600 : 1_500, 50: quick ? 6_000 : 15_000 };
const N_SIZE = quick ? 50_000 : 200_000;

const p = pool(14);
const schemas = { new: randomSchema('bench_fair_new'), old: randomSchema('bench_fair_old') };
await migrateSchema(p, schemas.new);
await migrateSchema(p, schemas.old);
for (const fn of ['queue_enqueue', 'queue_claim']) {
	const src = execFileSync('git', ['show', `${OLD_REV}:schema/functions/queue/${fn}.sql`], { cwd: repoRoot, encoding: 'utf8' });
	const c = await p.connect();
	try {
		await c.query(`SET search_path TO "${schemas.old}", pg_temp`);
		await c.query(src);
		await c.query(`ALTER FUNCTION ${fn} SECURITY DEFINER`);
	} finally {
		c.release();
	}
}
await p.query(`DROP INDEX "${schemas.old}".queue_tasks_tag_idx; DROP INDEX "${schemas.old}".queue_tasks_untagged_idx`);
let seq = 0;

async function enqueueRate(schema, n, producers, batch, groupOf) {
	const queue = `enq-${++seq}`;
	let next = 0;
	const t0 = now();
	await Promise.all(
		Array.from({ length: producers }, async (_, w) => {
			for (;;) {
				const start = next;
				if (start >= n) return;
				next += batch;
				const items = [];
				for (let i = start; i < Math.min(n, start + batch); i++) items.push({ queue, group: groupOf(i, w), payload: { i } });
				await Q.enqueue(p, ledgerSchemaOf(schema), items);
			}
		}),
	);
	return round((n / (now() - t0)) * 1000, 0);
}

async function drainRate(schema, C, B, T) {
	const queue = `drain-${++seq}`;
	for (let s = 0; s < T; s += 100) {
		const items = [];
		for (let i = s; i < Math.min(T, s + 100); i++) items.push({ queue, group: GROUPS[i % 3], payload: { i } });
		await Q.enqueue(p, ledgerSchemaOf(schema), items);
	}
	let done = 0;
	const t0 = now();
	await Promise.all(
		Array.from({ length: C }, async () => {
			for (;;) {
				const tasks = await Q.dequeue(p, ledgerSchemaOf(schema), { queue, limit: B, leaseSeconds: 300 });
				if (tasks.length === 0) return;
				const res = await Q.complete(p, ledgerSchemaOf(schema), tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
				done += res.length;
			}
		}),
	);
	if (done !== T) throw new Error(`${schema}: ${done} of ${T}`);
	return round((T / (now() - t0)) * 1000, 0);
}

async function sizes(schema) {
	const queue = `size-${++seq}`;
	for (let s = 0; s < N_SIZE; s += 5000) {
		const items = [];
		for (let i = s; i < Math.min(N_SIZE, s + 5000); i++) items.push({ queue, group: GROUPS[i % 3], payload: { i } });
		await Q.enqueue(p, ledgerSchemaOf(schema), items);
	}
	const { rows } = await p.query(
		`SELECT c.relname, pg_relation_size(c.oid)::bigint AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		  WHERE n.nspname = $1 AND (c.relname = 'queue_tasks' OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = $2::regclass))
		  ORDER BY c.relname`,
		[schema, `"${schema}".queue_tasks`],
	);
	const out = Object.fromEntries(rows.map((r) => [r.relname, Number(r.bytes)]));
	out.indexesTotal = rows.filter((r) => r.relname !== 'queue_tasks').reduce((a, r) => a + Number(r.bytes), 0);
	await p.query(`DELETE FROM "${schema}".queue_tasks WHERE queue = $1`, [queue]);
	return out;
}

const result = { suite: 'queue-fair-cost', oldRevision: OLD_REV, quick, enqueue: {}, drain: {}, size: {}, vacuumMs: {} };
for (const [name, schema] of Object.entries(schemas)) {
	result.enqueue[name] = {
		'1 producer, batch 100': await enqueueRate(schema, N_BATCH, 1, 100, (i) => GROUPS[i % 3]),
		'4 producers, batch 1, one group': await enqueueRate(schema, N_SINGLE, 4, 1, () => 'high'),
		'4 producers, batch 1, 3 groups': await enqueueRate(schema, N_SINGLE, 4, 1, (_, w) => GROUPS[w % 3]),
	};
	log(`${name} enqueue ${JSON.stringify(result.enqueue[name])}`);
}
for (const C of [1, 4, 10])
	for (const B of [1, 50]) {
		const key = `C=${C} B=${B}`;
		result.drain[key] = {};
		for (const [name, schema] of Object.entries(schemas)) result.drain[key][name] = await drainRate(schema, C, B, N_DRAIN[B]);
		result.drain[key].ratio = round(result.drain[key].new / result.drain[key].old, 2);
		log(`drain ${key} ${JSON.stringify(result.drain[key])}`);
	}
for (const [name, schema] of Object.entries(schemas)) {
	const t0 = now();
	await p.query(`VACUUM "${schema}".queue_tasks`);
	result.vacuumMs[name] = round(now() - t0, 0);
}
for (const [name, schema] of Object.entries(schemas)) result.size[name] = await sizes(schema);
log(`size ${JSON.stringify(result.size)}`);
for (const schema of Object.values(schemas)) await p.query(`DROP SCHEMA "${schema}" CASCADE`);
await p.end();
writeResult(result);
