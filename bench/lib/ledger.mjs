// Pieces the ledger benchmarks share: a timed Reserve through the node, the order items it reserves,
// and the end of a bulk load (statistics, checkpoint, sizes).
import { credentials, dist, now, round } from './common.mjs';

const { ReserveOperation } = dist('nodes/ReserveOperation/ReserveOperation.node.js');
const node = new ReserveOperation();

/** Bytes to MiB, one decimal. */
export const mib = (b) => round(Number(b) / 1048576, 1);

/**
 * Reserve Operation's parameters for order items (`{ json: { orderId, ... } }`): key
 * `payment:charge:<orderId>:v1`, target payments-api, the item as the request, lease 300 s.
 */
export function orderReserveParams(items) {
	return {
		keyMode: 'custom',
		operationKey: (i) => `payment:charge:${items[i].json.orderId}:v1`,
		target: 'payments-api',
		request: (i) => items[i].json,
		leaseSeconds: 300,
	};
}

/**
 * Runs Reserve Operation's execute on `items` (each `{ json: { orderId, amount, currency } }`, key
 * `payment:charge:<orderId>:v1`, target payments-api, lease 300 s) against `schema`, with the tests'
 * IExecuteFunctions stand-in `fakeExecute` (loadFakeExecute()). Returns the milliseconds it took;
 * throws unless every item left on output `expectOutput` (an index: 0 Unrecorded, 1 Proceed, 2 Done
 * Before, 3 In Progress, 4 Reconcile, 5 Conflict, 6 Failed Before).
 */
export async function timedReserve(fakeExecute, schema, items, expectOutput) {
	const fns = fakeExecute({
		items,
		nodeName: 'Reserve Operation',
		credentials: credentials(schema),
		params: orderReserveParams(items),
	});
	const t0 = now();
	const out = await node.execute.call(fns);
	const ms = now() - t0;
	if (out[expectOutput].length !== items.length) throw new Error(`expected ${items.length} items on output ${expectOutput}, got ${out.map((o) => o.length)}`);
	return ms;
}

let seq = 0;
/** `n` order items with keys no earlier call used (order-new-<call>-<i>). */
export function freshOrders(n) {
	const run = ++seq;
	return Array.from({ length: n }, (_, i) => ({ json: { orderId: `order-new-${run}-${i}`, amount: 1000 + i, currency: 'EUR' } }));
}

/**
 * Ends a bulk load into `schema`: VACUUM ANALYZE of both ledger tables, then a CHECKPOINT (so no
 * checkpoint the load triggered runs during the samples). Returns the tables' sizes in MiB.
 */
export async function finishLoad(db, schema) {
	const s = `"${schema}"`;
	await db.query(`VACUUM ANALYZE ${s}.operations`);
	await db.query(`VACUUM ANALYZE ${s}.operation_events`);
	await db.query('CHECKPOINT').catch(() => undefined);
	return ledgerSizes(db, schema);
}

/** pg_total_relation_size of operations and operation_events, MiB. */
export async function ledgerSizes(db, schema) {
	const s = `"${schema}"`;
	const { rows } = await db.query(`SELECT pg_total_relation_size('${s}.operations') AS ops, pg_total_relation_size('${s}.operation_events') AS ev`);
	return { operationsMiB: mib(rows[0].ops), eventsMiB: mib(rows[0].ev), totalMiB: mib(Number(rows[0].ops) + Number(rows[0].ev)) };
}
