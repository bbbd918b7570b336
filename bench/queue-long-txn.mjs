// Long transactions and vacuum: a steady producer/consumer at about RATE tasks/s
// (enqueue batches of 10, claim batches of 10, complete), while another session holds a
// REPEATABLE READ transaction open (its snapshot holds back the xmin horizon, so no dead row
// version of queue_tasks can be removed). Claim latency and the figures Stats reports
// (queue_health: dead tuples, last vacuum, the oldest xmin holder) before, during and after.
// Whether autovacuum is on is recorded: with it off, nothing cleans up after the transaction
// ends either, so a manual VACUUM is run under the load and the load measured once more.
import { dist, log, migrateSchema, now, pg, pool, quick, randomSchema, round, sleep, summarize, writeResult, DATABASE_URL, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const RATE = 200;
const PHASE_S = quick ? { before: 5, during: 15, after: 5 } : { before: 15, during: 60, after: 15 };

const db = pool(6);
const schema = randomSchema('bench_longtxn');
await migrateSchema(db, schema);
const queue = 'long-txn';
// Some backlog, so claims read a real index.
for (let i = 0; i < 5; i++) await Q.enqueue(db, ledgerSchemaOf(schema), Array.from({ length: 1000 }, (_, n) => ({ queue, group: ['high', 'normal', 'low'][n % 3], payload: { n } })));

let phase = 'before';
const claimMs = { before: [], during: [], after: [], afterVacuum: [] };
let stop = false;
const producer = (async () => {
	const every = 1000 / (RATE / 10);
	let next = now();
	while (!stop) {
		await Q.enqueue(db, ledgerSchemaOf(schema), Array.from({ length: 10 }, (_, n) => ({ queue, group: ['high', 'normal', 'low'][n % 3] })));
		next += every;
		const wait = next - now();
		if (wait > 0) await sleep(wait);
	}
})();
const consumer = (async () => {
	const every = 1000 / (RATE / 10);
	let next = now();
	while (!stop) {
		const t0 = now();
		const got = await Q.dequeue(db, ledgerSchemaOf(schema), { queue, limit: 10, leaseSeconds: 60 });
		claimMs[phase].push(now() - t0);
		if (got.length) await Q.complete(db, ledgerSchemaOf(schema), got);
		next += every;
		const wait = next - now();
		if (wait > 0) await sleep(wait);
	}
})();

const health = async () => {
	const s = await Q.stats(db, ledgerSchemaOf(schema), queue);
	return { deadTuples: s.table.deadTuples, liveTuples: s.table.liveTuples, lastAutovacuum: s.table.lastAutovacuum, autovacuumOn: s.table.autovacuumOn, oldestXmin: s.table.oldestXmin, depth: s.depth };
};
const snapshots = {};
await sleep(PHASE_S.before * 1000);
snapshots.before = await health();
log('before', JSON.stringify(snapshots.before));

const holder = new pg.Client({ connectionString: DATABASE_URL, application_name: 'bench-long-txn' });
await holder.connect();
await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
await holder.query(`SELECT count(*) FROM "${schema}".queue_tasks`);
phase = 'during';
await sleep(PHASE_S.during * 1000);
snapshots.during = await health();
log('during', JSON.stringify(snapshots.during));
await holder.query('COMMIT');
await holder.end();
phase = 'after';
await sleep(PHASE_S.after * 1000);
snapshots.after = await health();
log('after', JSON.stringify(snapshots.after));
// A manual VACUUM under the same load (autovacuum may be off here), then the load goes on.
const t0 = now();
await db.query(`VACUUM "${schema}".queue_tasks`);
const vacuumMs = now() - t0;
phase = 'afterVacuum';
await sleep(PHASE_S.after * 1000);
snapshots.afterVacuum = await health();
log('after VACUUM', JSON.stringify(snapshots.afterVacuum), `(${round(vacuumMs, 0)} ms)`);
stop = true;
await Promise.all([producer, consumer]);

const claim = Object.fromEntries(Object.entries(claimMs).map(([k, v]) => {
	const s = summarize(v);
	return [k, { p50: round(s.median, 2), p90: round(s.p90, 2), p99: round(s.p99, 2), n: s.n }];
}));
log('claim ms', JSON.stringify(claim));
await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.end();
writeResult({
	ratePerSec: RATE,
	phaseSeconds: PHASE_S,
	claimMs: claim,
	snapshots,
	vacuumMs: round(vacuumMs, 0),
	targets: [
		{
			what: 'Stats shows the long transaction while it is open (oldest xmin holder with its age)',
			value: snapshots.during.oldestXmin ? snapshots.during.oldestXmin.transactionSeconds : null,
			limit: `>= ${PHASE_S.during - 2} s`,
			met: Boolean(snapshots.during.oldestXmin && snapshots.during.oldestXmin.transactionSeconds >= PHASE_S.during - 2),
		},
	],
});
