// 6. Batch scale: one enqueue and one Reserve of 10 thousand and of 100 thousand items
// in ONE call each, timed per 1,000 items, so a linear cost gives a ratio near 1 (the old enqueue
// was quadratic: 20k items took 38 s). Enqueue: without dedupe keys, and with dedupe keys of which
// half repeat inside the batch. Reserve: new keys. Each size in its own schema; 3 samples each.
import { dist, log, migrateSchema, now, pool, quick, randomSchema, round, summarize, writeResult, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const L = dist('src/ledger/reserve.js');
const SIZES = quick ? [5_000, 50_000] : [10_000, 100_000];
const SAMPLES = quick ? 2 : 3;

const db = pool(2);
const schemas = [];
const perK = {};
const kinds = {
	'enqueue, no dedupe key': async (schema, n, r) => {
		await Q.enqueue(db, ledgerSchemaOf(schema), Array.from({ length: n }, (_, i) => ({ queue: `b${r}`, group: 'normal', payload: { n: i } })));
	},
	'enqueue, dedupe keys (half repeat)': async (schema, n, r) => {
		await Q.enqueue(db, ledgerSchemaOf(schema), Array.from({ length: n }, (_, i) => ({ queue: `k${r}`, group: 'normal', payload: { n: i }, dedupeKey: `key-${i % (n / 2)}` })));
	},
	'reserve, new keys': async (schema, n, r) => {
		const items = Array.from({ length: n }, (_, i) => L.prepareReserveItem(i, { operationKey: `bench:${r}:${i}`, request: { amount: i }, leaseSeconds: 300 }));
		await L.reserveOperations(db, ledgerSchemaOf(schema), items);
	},
};
for (const size of SIZES) {
	const schema = randomSchema(`bench_batch_${size / 1000}k`);
	schemas.push(schema);
	await migrateSchema(db, schema);
	perK[size] = {};
	for (const [kind, fn] of Object.entries(kinds)) {
		perK[size][kind] = [];
		for (let r = 0; r < SAMPLES; r++) {
			const t = now();
			await fn(schema, size, r);
			const ms = now() - t;
			perK[size][kind].push((ms / size) * 1000);
			log(`${kind}: ${size} items in ${round(ms / 1000, 2)} s`);
		}
	}
}
const rows = Object.keys(kinds).map((kind) => {
	const small = summarize(perK[SIZES[0]][kind]);
	const large = summarize(perK[SIZES[1]][kind]);
	return { kind: `${kind} (ms per 1,000 items)`, small, large, ratio: round(large.median / small.median, 2) };
});
const worst = Math.max(...rows.map((r) => r.ratio));
for (const s of schemas) await db.query(`DROP SCHEMA "${s}" CASCADE`);
await db.end();
writeResult({
	suite: 'batch-scale',
	sizes: SIZES,
	rows,
	targets: [
		{
			id: 'batch-scale',
			what: `Enqueue and Reserve cost per item at ${SIZES[1].toLocaleString('en')} vs ${SIZES[0].toLocaleString('en')} items in one call ≤ 2× (linear)`,
			value: worst,
			limit: 2,
			met: worst <= 2,
		},
	],
});
