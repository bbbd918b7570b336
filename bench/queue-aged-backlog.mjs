// 5b. Queue with an old backlog: claim latency (dequeue of 1 and of 50 tasks, 5:2:1 over
// high/normal/low, the default aging interval of 300 s) when every pending task has waited longer
// than the aging interval, against a young backlog of the same size, two queues of one schema,
// bulk-loaded with the tags enqueue would have written (group n-th task: n / weight). Young: the
// tasks became available over the last 100 s; old: over 100 s ending an hour ago. Claimed tasks
// are completed (not timed). Samples alternate between the queues. Then counted, in a block of
// claims of one per queue: how many took the full path (queue_claim_full calls, read from
// pg_stat_xact_user_functions inside each claim's transaction, track_functions = all), 10 ms apart
// so that the block spans several sweep gaps.
// Before migration 0010 every claim of the old backlog took the full path (its aging step moved one
// batch per claim); the sweep now moves up to 1,000 aged tasks at most once per sweep gap (a tenth
// of the interval, at most 1 s), and the claims between sweeps take the fast path.
import { dist, loadTaggedBacklog, timedClaim, log, migrateSchema, now, quick, randomSchema, round, sleep, summarize, writeResult, pg, DATABASE_URL, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const SIZE = quick ? 5_000 : 20_000;
const ROUNDS = quick ? { 1: 100, 50: 20 } : { 1: 400, 50: 80 };

const db = new pg.Pool({ connectionString: DATABASE_URL, max: 4, application_name: 'bench', options: '-c track_functions=all' });
db.on('error', () => undefined);
const schema = randomSchema('bench_qaged');
await migrateSchema(db, schema);
await loadTaggedBacklog(db, schema, 'young', SIZE);
await loadTaggedBacklog(db, schema, 'old', SIZE, { endsAgoSeconds: 3600 });
await db.query(`VACUUM ANALYZE "${schema}".queue_tasks`);
await db.query('CHECKPOINT').catch(() => undefined);
log(`loaded ${SIZE} pending tasks into each of two queues of ${schema}`);

/**
 * Claims of one task on a dedicated connection, each in its own transaction, counting those that
 * took the full path (pg_stat_xact_user_functions: this transaction's calls of queue_claim_full).
 */
async function countFullPath(queue, claims) {
	const c = await db.connect();
	let full = 0;
	try {
		const calls = async () =>
			(await c.query(`SELECT coalesce(sum(calls), 0)::int AS n FROM pg_stat_xact_user_functions WHERE schemaname = $1 AND funcname = 'queue_claim_full'`, [schema])).rows[0].n;
		for (let i = 0; i < claims; i++) {
			await c.query('BEGIN');
			const before = await calls();
			const tasks = await Q.dequeue(c, ledgerSchemaOf(schema), { queue, limit: 1, leaseSeconds: 300 });
			full += (await calls()) - before;
			await c.query('COMMIT');
			await Q.complete(db, ledgerSchemaOf(schema), tasks.map((x) => ({ taskId: x.taskId, leaseToken: x.leaseToken })));
			await sleep(10); // so that the block spans several sweep gaps (1 s each here)
		}
	} finally {
		c.release();
	}
	return full;
}

const claim = async (queue, limit) => (await timedClaim(db, schema, queue, limit)).ms;

for (const q of ['young', 'old']) for (let w = 0; w < 5; w++) await claim(q, 50);
const samples = { young: { 1: [], 50: [] }, old: { 1: [], 50: [] } };
for (const [limit, rounds] of Object.entries(ROUNDS)) {
	for (let r = 0; r < rounds; r++) {
		for (const q of r % 2 ? ['old', 'young'] : ['young', 'old']) samples[q][limit].push(await claim(q, Number(limit)));
	}
}
const COUNTED = quick ? 100 : 300;
const fullPath = { young: await countFullPath('young', COUNTED), old: await countFullPath('old', COUNTED) };

const rows = [];
for (const limit of Object.keys(ROUNDS)) {
	const a = summarize(samples.young[limit]);
	const b = summarize(samples.old[limit]);
	rows.push({ kind: `claim ${limit}`, young: a, old: b, ratio: round(b.median / a.median), ratioP90: round(b.p90 / a.p90) });
	log(`claim ${limit}: young backlog ${round(a.median, 2)} ms (p90 ${round(a.p90, 2)}); old backlog ${round(b.median, 2)} ms (p90 ${round(b.p90, 2)})`);
}
log(`claims of one that took the full path: young ${fullPath.young} of ${COUNTED}, old ${fullPath.old} of ${COUNTED}`);
const worst = Math.max(...rows.map((r) => r.ratio));
const result = {
	suite: 'queue-aged-backlog',
	size: SIZE,
	agingSeconds: 300,
	rows,
	fullPathClaims: { ...fullPath, of: COUNTED },
	targets: [
		{
			id: 'queue-aged-backlog',
			what: 'Claim latency with a backlog older than the aging interval ≤ 1.2× a young backlog of the same size',
			value: worst,
			limit: 1.2,
			met: worst <= 1.2,
		},
	],
};
await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.end();
writeResult(result);
