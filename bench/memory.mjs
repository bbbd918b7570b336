// 5b. Peak memory of one node execution handling 10,000 items: Reserve Operation, Confirm Operation
// (fed HTTP-response-shaped items, lineage to Reserve) and Priority Dequeue "Enqueue". Measured in
// a fresh process started with --expose-gc: baseline after a full GC with the input items already
// built, then process.memoryUsage() sampled every 2 ms during execute(); reported as deltas (MiB).
import { credentials, dist, loadFakeExecute, log, migrateSchema, peakMemory, pool, quick, randomSchema, round, writeResult } from './lib/common.mjs';

const { ReserveOperation } = dist('nodes/ReserveOperation/ReserveOperation.node.js');
const { ConfirmOperation } = dist('nodes/ConfirmOperation/ConfirmOperation.node.js');
const { PriorityDequeue } = dist('nodes/PriorityDequeue/PriorityDequeue.node.js');
const { closeAllPools } = dist('src/db/pool.js');
const { fakeExecute } = await loadFakeExecute();

const N = 10_000;
if (!global.gc) log('run with --expose-gc for exact baselines');
const db = pool(2);
const schema = randomSchema('bench_mem');
await migrateSchema(db, schema);
const creds = credentials(schema);

// Warm the pool, the schema check and the code paths with a small batch first.
async function reserveRun(items) {
	const fns = fakeExecute({
		items,
		nodeName: 'Reserve Operation',
		credentials: creds,
		params: { keyMode: 'custom', operationKey: (i) => `payment:charge:${items[i].json.orderId}:v1`, target: 'payments-api', request: (i) => items[i].json, leaseSeconds: 300 },
	});
	return new ReserveOperation().execute.call(fns);
}
async function confirmRun(proceed) {
	const bodies = proceed.map((it, i) => ({ json: { id: `pay_${it.json.orderId}`, status: 'succeeded', amount: it.json.amount, currency: 'EUR' }, pairedItem: { item: i } }));
	const fns = fakeExecute({
		items: bodies,
		nodeName: 'Confirm Operation',
		credentials: creds,
		parents: [{ name: 'Reserve Operation', type: 'n8n-nodes-operation-ledger.reserveOperation' }],
		pairedFrom: { 'Reserve Operation': (i) => proceed[i] },
		params: { outcomeSource: 'httpResult', externalReference: (i) => bodies[i].json.id, lineage: 'auto', options: {} },
	});
	return new ConfirmOperation().execute.call(fns);
}
async function enqueueRun(items) {
	const fns = fakeExecute({
		items,
		nodeName: 'Priority Dequeue',
		credentials: creds,
		params: { resource: 'task', operation: 'enqueue', queue: 'mem', priorityGroup: (i) => ['high', 'normal', 'low'][i % 3], payload: (i) => items[i].json, dedupeKey: '', options: {} },
	});
	return new PriorityDequeue().execute.call(fns);
}
const makeItems = (tag, n) => Array.from({ length: n }, (_, i) => ({ json: { orderId: `order-${tag}-${i}`, customerId: `cus_${i % 97}`, amount: 1000 + i, currency: 'EUR', note: 'x'.repeat(64) } }));

const warm = await reserveRun(makeItems('warm', 100));
await confirmRun(warm[1]);
await enqueueRun(makeItems('warm', 100));

const rows = [];
const reserveItems = makeItems('mem', N);
const r = await peakMemory(() => reserveRun(reserveItems));
if (r.value[1].length !== N) throw new Error('reserve: not all proceeded');
rows.push({ node: 'Reserve Operation', items: N, ...r, value: undefined });
const proceed = r.value[1]; // output 0 is Unrecorded
const c = await peakMemory(() => confirmRun(proceed));
if (c.value[1].length !== N) throw new Error('confirm: not all succeeded');
rows.push({ node: 'Confirm Operation', items: N, ...c, value: undefined });
const enqueueItems = makeItems('q', N);
const e = await peakMemory(() => enqueueRun(enqueueItems));
if (e.value[1].length !== N) throw new Error('enqueue: not all enqueued');
rows.push({ node: 'Priority Dequeue (Enqueue)', items: N, ...e, value: undefined });
for (const x of rows) log(`${x.node}: peak RSS +${x.peakRssDeltaMiB} MiB, peak heap +${x.peakHeapDeltaMiB} MiB`);

await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.end();
await closeAllPools();
writeResult({ suite: 'memory', items: N, rows: rows.map((x) => ({ ...x, value: undefined })), note: quick ? 'quick scale' : undefined });
