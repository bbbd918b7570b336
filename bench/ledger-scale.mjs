// 2. Ledger at scale: Reserve latency through the node (batch of 1 and of 100 new keys, and a batch
// of 100 replays of existing succeeded keys) with 10 thousand and with 1 million existing
// operations, each in its own schema, bulk-loaded with INSERT ... SELECT generate_series and then
// VACUUM ANALYZEd. Samples alternate between the two schemas.
import {
	credentials,
	dist,
	loadFakeExecute,
	log,
	migrateSchema,
	now,
	pool,
	quick,
	randomSchema,
	round,
	summarize,
	writeResult,
} from './lib/common.mjs';
import { finishLoad, freshOrders, timedReserve } from './lib/ledger.mjs';

const { closeAllPools } = dist('src/db/pool.js');
const { fakeExecute } = await loadFakeExecute();

const SIZES = quick ? [10_000, 100_000] : [10_000, 1_000_000];
const ROUNDS = quick ? { b1: 60, b100: 15, replay: 15 } : { b1: 300, b100: 60, replay: 60 };

const db = pool(4);
const schemas = [];

/** Bulk-loads `n` settled operations (98% succeeded, 1% failed retryable, 1% unknown) and 2 events each. */
async function load(schema, n) {
	const s = `"${schema}"`;
	const t = now();
	// The request/fingerprint pair is the one the node computes for {orderId, amount, currency}, so
	// the loaded keys can be replayed through the node.
	await db.query(`
		INSERT INTO ${s}.operations (operation_key, status, fingerprint, fingerprint_alg, target, request, attempt,
		    idempotency_key, lease_token_hash, lease_expires_at, external_ref, response, reason, retryable, unknown_since,
		    next_check_at, settled_at, created_at, updated_at)
		SELECT 'payment:charge:order-load-' || g || ':v1',
		       CASE WHEN g % 100 = 7 THEN 'failed' WHEN g % 100 = 13 THEN 'unknown' ELSE 'succeeded' END,
		       encode(sha256(convert_to(format('{"amount":%s,"currency":"EUR","orderId":"order-load-%s"}', 1000 + g % 5000, g), 'UTF8')), 'hex'),
		       'sha256-jcs-rfc8785', 'payments-api',
		       jsonb_build_object('orderId', 'order-load-' || g, 'amount', 1000 + g % 5000, 'currency', 'EUR'),
		       1, ${s}.downstream_idempotency_key('payment:charge:order-load-' || g || ':v1', 1),
		       sha256(uuid_send(gen_random_uuid())), ts + interval '5 minutes',
		       CASE WHEN g % 100 NOT IN (7, 13) THEN 'pay_' || g END,
		       CASE WHEN g % 100 NOT IN (7, 13) THEN jsonb_build_object('id', 'pay_' || g, 'status', 'succeeded') END,
		       CASE WHEN g % 100 = 7 THEN 'HTTP 503' WHEN g % 100 = 13 THEN 'timeout' END,
		       CASE WHEN g % 100 = 7 THEN true END,
		       CASE WHEN g % 100 = 13 THEN ts END,
		       CASE WHEN g % 100 = 13 THEN ts + interval '1 hour' END,
		       CASE WHEN g % 100 <> 13 THEN ts + interval '1 second' END, ts, ts
		  FROM generate_series(1, $1::int) g, LATERAL (SELECT now() - (($1::int - g) * interval '1 second') AS ts) x`,
		[n],
	);
	await db.query(`
		INSERT INTO ${s}.operation_events (operation_key, event, from_status, to_status, attempt, lease_token_hash, execution_id, workflow_id, node_name, item_index, created_at)
		SELECT o.operation_key, e.event, e.f, e.t, 1, o.lease_token_hash, 'load', 'load', 'load', 0, o.created_at
		  FROM ${s}.operations o,
		       LATERAL (VALUES ('reserved', NULL, 'reserved'), ('confirmed_' || o.status, 'reserved', o.status)) e(event, f, t)`);
	const size = await finishLoad(db, schema);
	log(`loaded ${n} operations into ${schema} in ${round((now() - t) / 1000, 1)} s (operations ${size.operationsMiB} MiB, events ${size.eventsMiB} MiB)`);
	return { operations: n, operationsMiB: size.operationsMiB, eventsMiB: size.eventsMiB, loadSeconds: round((now() - t) / 1000, 1) };
}

const reserve = (schema, items, expectOutput) => timedReserve(fakeExecute, schema, items, expectOutput);
const fresh = freshOrders;
/** 100 distinct existing succeeded keys, spread over the whole table. */
const replays = (size, n) => {
	const out = [];
	const used = new Set();
	while (out.length < n) {
		const g = 1 + Math.floor(Math.random() * size);
		if (g % 100 === 7 || g % 100 === 13 || used.has(g)) continue;
		used.add(g);
		out.push({ json: { orderId: `order-load-${g}`, amount: 1000 + (g % 5000), currency: 'EUR' } });
	}
	return out;
};

const loaded = [];
for (const size of SIZES) {
	const schema = randomSchema(`bench_lscale_${size >= 1e6 ? `${size / 1e6}m` : `${size / 1e3}k`}`);
	await migrateSchema(db, schema);
	schemas.push(schema);
	loaded.push({ schema, size, ...(await load(schema, size)) });
}

// Warm-up: every schema and connection.
for (const l of loaded) for (let w = 0; w < 5; w++) await reserve(l.schema, fresh(100), 1);

const samples = Object.fromEntries(loaded.map((l) => [l.size, { b1: [], b100: [], replay: [] }]));
for (const [kind, rounds] of Object.entries(ROUNDS)) {
	for (let r = 0; r < rounds; r++) {
		const order = r % 2 ? [...loaded].reverse() : loaded;
		for (const l of order) {
			const ms =
				kind === 'b1' ? await reserve(l.schema, fresh(1), 1) : kind === 'b100' ? await reserve(l.schema, fresh(100), 1) : await reserve(l.schema, replays(l.size, 100), 2);
			samples[l.size][kind].push(ms);
		}
	}
}

const [small, large] = loaded;
const rows = [];
for (const kind of Object.keys(ROUNDS)) {
	const a = summarize(samples[small.size][kind]);
	const b = summarize(samples[large.size][kind]);
	rows.push({
		kind: kind === 'b1' ? 'reserve 1 new key' : kind === 'b100' ? 'reserve 100 new keys' : 'reserve 100 replays (already succeeded)',
		small: a,
		large: b,
		ratio: round(b.median / a.median),
		ratioP90: round(b.p90 / a.p90),
	});
	log(`${kind}: ${small.size} → ${round(a.median, 2)} ms (p90 ${round(a.p90, 2)}); ${large.size} → ${round(b.median, 2)} ms (p90 ${round(b.p90, 2)}); ratio ${round(b.median / a.median)}`);
}

// Plans of the statements that depend on table size, for the record.
const plans = {};
for (const l of loaded) {
	const { rows: p } = await db.query(
		`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT * FROM "${l.schema}".operations WHERE operation_key = 'payment:charge:order-load-4242:v1' FOR UPDATE`,
	);
	plans[l.size] = p.map((x) => x['QUERY PLAN']);
}

const worst = Math.max(...rows.filter((r) => r.kind !== 'reserve 100 replays (already succeeded)').map((r) => r.ratio));
const result = {
	suite: 'ledger-scale',
	sizes: SIZES,
	loaded: loaded.map(({ schema, ...rest }) => rest),
	rows,
	plans,
	targets: [
		{
			id: 'ledger-scale',
			what: `Reserve latency (batch 1 and 100) with ${SIZES[1].toLocaleString('en')} vs ${SIZES[0].toLocaleString('en')} existing operations ≤ 1.2× apart`,
			value: worst,
			limit: 1.2,
			met: worst <= 1.2,
		},
	],
};
for (const s of schemas) await db.query(`DROP SCHEMA "${s}" CASCADE`);
await db.end();
await closeAllPools();
writeResult(result);
