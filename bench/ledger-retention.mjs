// 7. Ledger retention: what compaction (Operation Ledger Admin → Compact) reclaims and what it
// costs Reserve. One schema is bulk-loaded with N settled operations (full: 1,000,000; quick:
// 100,000), 90% settled 100 days ago (eligible with "older than 30 days") and 10% yesterday, each
// with a request (~120 B), a response (~1 KiB) and 2 events, then VACUUM ANALYZEd. Measured:
//   - pg_total_relation_size of operations and operation_events before, after compaction + plain
//     VACUUM (files keep their size; the heap space freed for reuse by new rows is measured with
//     pgstattuple when the server has it), and after VACUUM FULL (what an offline rewrite returns
//     to the operating system; it takes an exclusive lock, so it is not part of routine retention);
//   - Reserve latency through the node (batch of 1 new key; batch of 100 replays of compacted
//     keys) before compaction, during it (a concurrent loop of batch-1 Reserves) and after it;
//   - compaction throughput (operations and events per second; batch size 2,000).
// Every replay after compaction must still answer Done Before: the suite fails otherwise.
import { credentials, dist, loadFakeExecute, log, migrateSchema, now, pool, quick, randomSchema, round, summarize, writeResult, ledgerSchemaOf } from './lib/common.mjs';
import { finishLoad, freshOrders, ledgerSizes, mib, timedReserve } from './lib/ledger.mjs';

const { runRetention, checkRetentionOptions } = dist('src/ledger/admin/retention.js');
const { closeAllPools } = dist('src/db/pool.js');
const { fakeExecute } = await loadFakeExecute();

const N = Number(process.env.BENCH_RETENTION_N) || (quick ? 100_000 : 1_000_000);
const ROUNDS = quick ? { b1: 100, replay: 20 } : { b1: 300, replay: 60 };
const db = pool(4);
const schema = randomSchema('bench_retention');
const s = `"${schema}"`;
await migrateSchema(db, schema);

const sizes = () => ledgerSizes(db, schema);

// Free (reusable) space inside the heaps, from pgstattuple when the server has it (contrib).
const hasStattuple = await db.query('CREATE EXTENSION IF NOT EXISTS pgstattuple').then(
	() => true,
	(e) => (log(`pgstattuple not available (${e.message}): free space not measured`), false),
);
async function freeSpace() {
	if (!hasStattuple) return null;
	const { rows } = await db.query(
		`SELECT (pgstattuple('${s}.operations')).free_space AS ops, (pgstattuple('${s}.operation_events')).free_space AS ev`,
	);
	return { operationsFreeMiB: mib(rows[0].ops), eventsFreeMiB: mib(rows[0].ev), totalFreeMiB: mib(Number(rows[0].ops) + Number(rows[0].ev)) };
}

let t = now();
await db.query(
	`INSERT INTO ${s}.operations (operation_key, status, fingerprint, fingerprint_alg, target, request, attempt, idempotency_key,
	     lease_token_hash, lease_expires_at, external_ref, response, settled_at, created_at, updated_at)
	 SELECT 'payment:charge:order-ret-' || g || ':v1', 'succeeded',
	        encode(sha256(convert_to(format('{"amount":%s,"currency":"EUR","orderId":"order-ret-%s"}', 1000 + g % 5000, g), 'UTF8')), 'hex'),
	        'sha256-jcs-rfc8785', 'payments-api',
	        jsonb_build_object('orderId', 'order-ret-' || g, 'amount', 1000 + g % 5000, 'currency', 'EUR'),
	        1, ${s}.downstream_idempotency_key('payment:charge:order-ret-' || g || ':v1', 1),
	        ${s}.ledger_token_hash(gen_random_uuid()), ts + interval '5 minutes',
	        'pay_' || g,
	        jsonb_build_object('id', 'pay_' || g, 'status', 'succeeded', 'amount', 1000 + g % 5000, 'currency', 'EUR',
	                           'receipt', repeat(md5(g::text), 28)),
	        ts + interval '1 second', ts, ts
	   FROM generate_series(1, $1::int) g,
	        LATERAL (SELECT CASE WHEN g % 10 = 0 THEN now() - interval '1 day' ELSE now() - interval '100 days' END
	                        - (($1::int - g) * interval '1 millisecond') AS ts) x`,
	[N],
);
await db.query(
	`INSERT INTO ${s}.operation_events (operation_key, event, from_status, to_status, attempt, lease_token_hash, execution_id, workflow_id, node_name, item_index, detail, created_at)
	 SELECT o.operation_key, e.event, e.f, e.t, 1, o.lease_token_hash, 'load', 'load', 'Reserve Operation', 0, e.d, o.created_at
	   FROM ${s}.operations o,
	        LATERAL (VALUES ('reserved', NULL, 'reserved', NULL::jsonb),
	                        ('confirmed_succeeded', 'reserved', 'succeeded', jsonb_build_object('externalRef', o.external_ref, 'late', false))) e(event, f, t, d)`,
);
const loaded = await finishLoad(db, schema);
const loadSeconds = round((now() - t) / 1000, 1);
const before = { ...loaded, ...(await freeSpace()) };
log(`loaded ${N} operations in ${loadSeconds} s: operations ${before.operationsMiB} MiB, events ${before.eventsMiB} MiB`);

const reserve = (items, expectOutput) => timedReserve(fakeExecute, schema, items, expectOutput);
const fresh = freshOrders;
/** 100 distinct old (compactable) succeeded keys, spread over the table. */
const replays = (n) => {
	const out = [];
	const used = new Set();
	while (out.length < n) {
		const g = 1 + Math.floor(Math.random() * N);
		if (g % 10 === 0 || used.has(g)) continue;
		used.add(g);
		out.push({ json: { orderId: `order-ret-${g}`, amount: 1000 + (g % 5000), currency: 'EUR' } });
	}
	return out;
};
async function latency(label) {
	for (let w = 0; w < 5; w++) await reserve(fresh(1), 1);
	const b1 = [];
	const replay = [];
	for (let r = 0; r < ROUNDS.b1; r++) b1.push(await reserve(fresh(1), 1));
	for (let r = 0; r < ROUNDS.replay; r++) replay.push(await reserve(replays(100), 2));
	const out = { reserve1: summarize(b1), replay100: summarize(replay) };
	log(`${label}: reserve 1 new key p50 ${round(out.reserve1.median, 2)} ms p99 ${round(out.reserve1.p99, 2)} ms; 100 replays p50 ${round(out.replay100.median, 2)} ms p99 ${round(out.replay100.p99, 2)} ms`);
	return out;
}

// Read both tables once so "before" starts from the same warm OS page cache that compaction and
// VACUUM leave behind for "after" (otherwise "after" looks faster only because it is warmer).
await db.query(`SELECT count(*) FROM ${s}.operations WHERE response IS NOT NULL`);
await db.query(`SELECT count(*) FROM ${s}.operation_events WHERE detail IS NOT NULL`);
const latencyBefore = await latency('before');

// Compaction, with a concurrent Reserve loop measuring what it costs a live workflow.
let stop = false;
const during = [];
const loop = (async () => {
	while (!stop) during.push(await reserve(fresh(1), 1));
})();
t = now();
const report = await runRetention(
	db,
	ledgerSchemaOf(schema),
	checkRetentionOptions({ mode: 'compact', olderThanDays: 30, batchSize: 2000, maxBatches: 100000, maxDurationMs: 3600000, statementTimeoutMs: 120000 }),
	{ nodeName: 'bench' },
);
const compactSeconds = (now() - t) / 1000;
stop = true;
await loop;
const latencyDuring = { reserve1: summarize(during) };
log(`compacted ${report.operations} operations and ${report.eventsDeleted} events in ${report.batches} batches, ${round(compactSeconds, 1)} s (${report.stoppedBecause}); concurrent reserve 1 p50 ${round(latencyDuring.reserve1.median, 2)} ms p99 ${round(latencyDuring.reserve1.p99, 2)} ms`);
const afterCompaction = await sizes();
t = now();
await db.query(`VACUUM ANALYZE ${s}.operations`);
await db.query(`VACUUM ANALYZE ${s}.operation_events`);
const vacuumSeconds = round((now() - t) / 1000, 1);
await db.query('CHECKPOINT').catch(() => undefined);
const afterVacuum = { ...(await sizes()), ...(await freeSpace()) };
log(
	`sizes: before ${before.totalMiB} MiB (free ${before.totalFreeMiB ?? 'n/a'}), after compaction ${afterCompaction.totalMiB} MiB, ` +
		`after VACUUM ${afterVacuum.totalMiB} MiB of which ${afterVacuum.totalFreeMiB ?? 'n/a'} MiB free for reuse (${vacuumSeconds} s)`,
);

const latencyAfter = await latency('after');
// The promise holds: compacted keys still answer Done Before (checked by reserve(..., 2)),
// and a different request for one of them is a Conflict (output 4).
await reserve([{ json: { orderId: 'order-ret-1', amount: 1, currency: 'USD' } }], 5);

t = now();
await db.query(`VACUUM FULL ${s}.operations`);
await db.query(`VACUUM FULL ${s}.operation_events`);
const vacuumFullSeconds = round((now() - t) / 1000, 1);
const afterVacuumFull = await sizes();
log(`after VACUUM FULL: ${afterVacuumFull.totalMiB} MiB (${vacuumFullSeconds} s, exclusive lock)`);

const result = {
	suite: 'ledger-retention',
	operations: N,
	eligible: N - Math.floor(N / 10),
	loadSeconds,
	sizes: { before, afterCompaction, afterVacuum, afterVacuumFull },
	// Online (plain VACUUM): the files keep their size, the freed space is reused by new rows.
	// Offline (VACUUM FULL): returned to the operating system.
	reclaimedMiB: {
		reusableAfterVacuum: afterVacuum.totalFreeMiB === undefined ? null : round(afterVacuum.totalFreeMiB - (before.totalFreeMiB ?? 0), 1),
		returnedByVacuum: round(before.totalMiB - afterVacuum.totalMiB, 1),
		returnedByVacuumFull: round(before.totalMiB - afterVacuumFull.totalMiB, 1),
	},
	compaction: {
		...report,
		seconds: round(compactSeconds, 1),
		operationsPerSecond: round(report.operations / compactSeconds, 0),
		eventsPerSecond: round(report.eventsDeleted / compactSeconds, 0),
		vacuumSeconds,
		vacuumFullSeconds,
	},
	latency: { before: latencyBefore, during: latencyDuring, after: latencyAfter },
	targets: [
		{
			id: 'ledger-retention',
			what: 'Compaction leaves every eligible operation compacted, and compacted keys still answer Done Before',
			value: report.operations,
			limit: N - Math.floor(N / 10),
			met: report.operations === N - Math.floor(N / 10),
		},
	],
};
await db.query(`DROP SCHEMA ${s} CASCADE`);
await db.end();
await closeAllPools();
writeResult(result);
