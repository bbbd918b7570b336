// Claim latency and the cost of bounding it (statement_timeout / lock_timeout per transaction).
// One process, one Postgres, one pool of 1 connection (no pool wait in the figures); the variants
// take turns sample by sample (in a rotating order), all claiming from one queue:
//   plain      - the claim statement alone, autocommit (what Priority Dequeue sent before the queue
//                path was bounded): 1 round trip.
//   3 trips    - BEGIN; SET LOCAL statement_timeout; SET LOCAL lock_timeout (one simple query),
//                the claim (extended protocol, parameters), COMMIT: 3 round trips.
//   package    - dequeue() of the built package with the credential's bounds (src/db/bounds.ts
//                decides how it is sent: one round trip, BEGIN; SET LOCAL …; claim; COMMIT).
// For batch sizes B = 1 and B = 50: SAMPLES claims each, p50 / p90 / p99 / mean in milliseconds.
// Claimed tasks are left processing (their lease is long); the schema is dropped at the end.
import { dist, log, migrateSchema, now, pool, quick, randomSchema, round, summarize, writeResult, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const SAMPLES = quick ? 100 : 400;
const WARMUP = 20;
const BATCHES = [1, 50];
const bounds = { statementTimeoutMs: 30_000, lockTimeoutMs: 5_000 };

const db = pool(1);
const schema = randomSchema('bench_claimb');
await migrateSchema(db, schema);
const claimSql = `SELECT * FROM "${schema}".queue_claim($1, $2::text[], $3::integer[], $4, $5, $6)`;
const args = (queue, limit) => [queue, ['high', 'normal', 'low'], [5, 2, 1], limit, 3600, 300];

const variants = {
	plain: async (queue, limit) => (await db.query(claimSql, args(queue, limit))).rows.length,
	'3 trips': async (queue, limit) => {
		const c = await db.connect();
		try {
			await c.query(`BEGIN; SET LOCAL statement_timeout = ${bounds.statementTimeoutMs}; SET LOCAL lock_timeout = ${bounds.lockTimeoutMs}`);
			const n = (await c.query(claimSql, args(queue, limit))).rows.length;
			await c.query('COMMIT');
			return n;
		} catch (e) {
			await c.query('ROLLBACK').catch(() => undefined);
			throw e;
		} finally {
			c.release();
		}
	},
	package: async (queue, limit) => (await Q.dequeue(db, ledgerSchemaOf(schema), { queue, limit, leaseSeconds: 3600, agingSeconds: 300 }, bounds)).length,
};

const result = { suite: 'queue-claim-bounds', samples: SAMPLES, batches: {} };
for (const B of BATCHES) {
	const names = Object.keys(variants);
	// One queue for all variants: they take from the same rows in turn, so queue state (tags, dead
	// row versions) weighs on each alike. (Separate queues per variant differed by up to 2x at
	// B = 50 whatever the variant: see docs/benchmarks-history.md, "Bounded claims".)
	const queue = `claims-${B}`;
	const total = (SAMPLES + WARMUP) * B * names.length;
	for (let i = 0; i < total; i += 2000) {
		const n = Math.min(2000, total - i);
		await Q.enqueue(db, ledgerSchemaOf(schema), Array.from({ length: n }, (_, k) => ({ queue, group: ['high', 'normal', 'low'][k % 3], payload: { k } })), { notify: 'none' });
	}
	await db.query(`VACUUM ANALYZE "${schema}".queue_tasks`);
	const samples = Object.fromEntries(names.map((n) => [n, []]));
	for (let s = 0; s < SAMPLES + WARMUP; s++) {
		// The order rotates every round, so no variant always follows the same one.
		for (let v = 0; v < names.length; v++) {
			const name = names[(s + v) % names.length];
			const t0 = now();
			const got = await variants[name](queue, B);
			const ms = now() - t0;
			if (got !== B) throw new Error(`${name}: claimed ${got}, expected ${B}`);
			if (s >= WARMUP) samples[name].push(ms);
		}
	}
	result.batches[B] = {};
	for (const name of names) {
		const sum = summarize(samples[name]);
		result.batches[B][name] = { p50: round(sum.median), p90: round(sum.p90), p99: round(sum.p99), mean: round(sum.mean) };
		log(`B=${B} ${name.padEnd(8)} p50 ${round(sum.median)} ms  p90 ${round(sum.p90)}  p99 ${round(sum.p99)}  mean ${round(sum.mean)}`);
	}
}
await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.end();
writeResult(result);
