// 5c. Claim latency while a backlog drains between two vacuums. A claim reads the tag index from
// the queue's head; every task claimed since the last VACUUM leaves an index entry there that is
// dead (marked so by the first scan that meets it, but removed only by VACUUM), and each claim
// steps over those entries, leaf page by leaf page. Autovacuum of a large table comes late (by
// default after 20% of its rows are dead, checked once a minute), so this measures the claim as a
// function of the tasks claimed since the last VACUUM: N tasks bulk-loaded (tagged as enqueue
// would), VACUUM ANALYZE, autovacuum off for this table only (so that the figures depend on the
// claimed count, not on when autovacuum happens to run), then drained by claims of 50 (each
// completed); at every tenth of the drain, samples of a claim of 1 and of an enqueue of 1 (the
// enqueue reads the queue's virtual time from the same head).
import { dist, loadTaggedBacklog, timedClaim, log, migrateSchema, now, pool, quick, randomSchema, round, summarize, writeResult, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const N = quick ? 20_000 : 100_000;
const SAMPLES = quick ? 20 : 60;
const queue = 'drain';
const db = pool(4);
const schema = randomSchema('bench_qdrain');
await migrateSchema(db, schema);
await loadTaggedBacklog(db, schema, queue, N);
await db.query(`VACUUM ANALYZE "${schema}".queue_tasks`);
await db.query(`ALTER TABLE "${schema}".queue_tasks SET (autovacuum_enabled = false)`);
await db.query('CHECKPOINT').catch(() => undefined);
log(`loaded ${N} pending tasks into ${schema}`);

const claimAndComplete = (limit) => timedClaim(db, schema, queue, limit, { exact: false });
async function sample(drained) {
	const claims = [];
	const enq = [];
	for (let i = 0; i < SAMPLES; i++) {
		claims.push((await claimAndComplete(1)).ms);
		const t = now();
		await Q.enqueue(db, ledgerSchemaOf(schema), [{ queue, group: 'low', payload: { late: i } }]);
		enq.push(now() - t);
	}
	const c = summarize(claims);
	const e = summarize(enq);
	const { rows } = await db.query(`SELECT pg_relation_size($1::regclass) AS b`, [`"${schema}".queue_tasks_tag_idx`]);
	log(`claimed since VACUUM ${drained}: claim 1 ${round(c.median, 2)} ms (p90 ${round(c.p90, 2)}), enqueue 1 ${round(e.median, 2)} ms`);
	return { claimedSinceVacuum: drained, claimMs: c, enqueueMs: e, tagIndexBytes: Number(rows[0].b) };
}

const points = [];
let drained = 0;
points.push(await sample(drained));
for (let step = 1; step <= 9; step++) {
	const target = (N * step) / 10;
	while (drained < target) drained += (await claimAndComplete(50)).n;
	drained += SAMPLES; // the sampled claims
	points.push(await sample(drained));
}
const first = points[0];
const last = points[points.length - 1];
const ratio = round(last.claimMs.median / first.claimMs.median);
const result = {
	suite: 'queue-drain',
	size: N,
	points,
	ratio,
	enqueueRatio: round(last.enqueueMs.median / first.enqueueMs.median),
	targets: [
		{
			id: 'queue-drain',
			what: `Claim latency after ${last.claimedSinceVacuum.toLocaleString('en')} tasks claimed since the last VACUUM ≤ 1.2× right after it`,
			value: ratio,
			limit: 1.2,
			met: ratio <= 1.2,
		},
	],
};
await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.end();
writeResult(result);
