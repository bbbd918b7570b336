// 5a. Queue at scale: claim latency (dequeue of 1 and of 50 tasks, 5:2:1 over high/normal/low) with
// 10 thousand and with 1 million pending tasks, each in its own schema, bulk-loaded with
// INSERT ... SELECT generate_series and VACUUM ANALYZEd. Claimed tasks are completed (not timed)
// so the pending count stays put. Samples alternate between the two schemas.
// Since migration 0009 the load writes the fairness tags enqueue would have written (group n-th
// task: n / weight), and both schemas' tasks became available over the same 100 s (before, 10 ms
// apart: the 1 M schema's backlog was 2.8 hours old, so with the default 300 s aging interval only
// that schema's claims moved aged tasks, which measured aging, not scale).
import { log, timedClaim, migrateSchema, now, pool, quick, randomSchema, round, summarize, writeResult } from './lib/common.mjs';

const SIZES = quick ? [10_000, 100_000] : [10_000, 1_000_000];
const ROUNDS = quick ? { 1: 60, 50: 20 } : { 1: 300, 50: 80 };
const queue = 'scale';

const db = pool(4);
const loaded = [];
for (const size of SIZES) {
	const schema = randomSchema(`bench_qscale_${size >= 1e6 ? `${size / 1e6}m` : `${size / 1e3}k`}`);
	await migrateSchema(db, schema);
	const t = now();
	await db.query(
		`INSERT INTO "${schema}".queue_tasks (queue, priority_group, status, payload, run_at, enqueued_at, vtag)
		 SELECT $2, (ARRAY['high', 'normal', 'low'])[1 + g % 3], 'pending',
		        jsonb_build_object('n', g, 'file', 'file-' || g || '.csv'),
		        now() - (($1::int - g) * interval '1 second' / ($1::int / 100)), now() - (($1::int - g) * interval '1 second' / ($1::int / 100)),
		        ((g + 2) / 3)::float8 / (ARRAY[5, 2, 1])[1 + g % 3]
		   FROM generate_series(1, $1::int) g`,
		[size, queue],
	);
	// Finished work in the archive too, as a queue that ran for a while would have.
	await db.query(
		`INSERT INTO "${schema}".queue_tasks_archive (id, queue, priority_group, status, payload, attempts, max_attempts, enqueued_at, finished_at)
		 SELECT -g, $2, 'normal', 'succeeded', '{}'::jsonb, 1, 5, now() - interval '1 day', now() - interval '1 day' FROM generate_series(1, $1::int) g`,
		[size, queue],
	);
	await db.query(`VACUUM ANALYZE "${schema}".queue_tasks`);
	await db.query(`VACUUM ANALYZE "${schema}".queue_tasks_archive`);
	// Flush the bulk load's dirty pages now, so no checkpoint triggered by it runs during the samples.
	await db.query('CHECKPOINT').catch(() => undefined);
	log(`loaded ${size} pending tasks into ${schema} in ${round((now() - t) / 1000, 1)} s`);
	loaded.push({ schema, size, loadSeconds: round((now() - t) / 1000, 1) });
}

const claim = async (schema, limit) => (await timedClaim(db, schema, queue, limit)).ms;

for (const l of loaded) for (let w = 0; w < 20; w++) await claim(l.schema, 50);
const samples = Object.fromEntries(loaded.map((l) => [l.size, { 1: [], 50: [] }]));
for (const [limit, rounds] of Object.entries(ROUNDS)) {
	for (let r = 0; r < rounds; r++) {
		for (const l of r % 2 ? [...loaded].reverse() : loaded) samples[l.size][limit].push(await claim(l.schema, Number(limit)));
	}
}

const rows = [];
for (const limit of Object.keys(ROUNDS)) {
	const a = summarize(samples[SIZES[0]][limit]);
	const b = summarize(samples[SIZES[1]][limit]);
	rows.push({ kind: `claim ${limit}`, small: a, large: b, ratio: round(b.median / a.median), ratioP90: round(b.p90 / a.p90) });
	log(`claim ${limit}: ${SIZES[0]} → ${round(a.median, 2)} ms (p90 ${round(a.p90, 2)}); ${SIZES[1]} → ${round(b.median, 2)} ms (p90 ${round(b.p90, 2)})`);
}

// The head read of one group, for the record.
const plans = {};
for (const l of loaded) {
	const { rows: p } = await db.query(
		`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT t.id, t.run_at FROM "${l.schema}".queue_tasks t
		  WHERE t.queue = $1 AND t.priority_group = 'high' AND t.status = 'pending' AND t.run_at <= now()
		  ORDER BY t.run_at, t.id LIMIT 50 FOR UPDATE SKIP LOCKED`,
		[queue],
	);
	plans[l.size] = p.map((x) => x['QUERY PLAN']);
}

const worst = Math.max(...rows.map((r) => r.ratio));
const result = {
	suite: 'queue-scale',
	sizes: SIZES,
	loaded: loaded.map(({ schema, ...rest }) => rest),
	rows,
	plans,
	targets: [
		{
			id: 'queue-scale',
			what: `Claim latency with ${SIZES[1].toLocaleString('en')} vs ${SIZES[0].toLocaleString('en')} pending tasks ≤ 1.2× apart`,
			value: worst,
			limit: 1.2,
			met: worst <= 1.2,
		},
	],
};
for (const l of loaded) await db.query(`DROP SCHEMA "${l.schema}" CASCADE`);
await db.end();
writeResult(result);
