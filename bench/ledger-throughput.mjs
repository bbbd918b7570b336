import { randomUUID } from 'node:crypto';
// 1. Ledger throughput: Reserve + Confirm of one batch of N new operation keys, three ways, interleaved
// round by round on the same database and schema:
//   node     - the nodes' own execute path (ReserveOperation / ConfirmOperation .execute with the
//              tests' IExecuteFunctions stand-in), Confirm fed HTTP-response-shaped items and finding
//              its reservations through paired-item lineage, as it does after an HTTP Request node;
//   direct   - the same two statements with the same JSON documents, sent with pg (the limit);
//   perItem  - one statement per item and round trip (INSERT ... ON CONFLICT, then UPDATE), as a
//              workflow with n8n's Postgres node per item would do it.
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
	serverInfo,
	ledgerSchemaOf,
} from './lib/common.mjs';
import { orderReserveParams } from './lib/ledger.mjs';

const { ReserveOperation } = dist('nodes/ReserveOperation/ReserveOperation.node.js');
const { ConfirmOperation } = dist('nodes/ConfirmOperation/ConfirmOperation.node.js');
const { prepareReserveItem, encodeReserveBatch, reserveSql } = dist('src/ledger/reserve.js');
const { prepareConfirmItem, encodeConfirmBatch, confirmSql } = dist('src/ledger/confirm.js');
const { FINGERPRINT_ALGORITHM } = dist('src/json/canonical.js');
const { closeAllPools } = dist('src/db/pool.js');
const { fakeExecute } = await loadFakeExecute();

const RESERVE_NAME = 'Reserve Operation';
const RESERVE_TYPE = 'n8n-nodes-operation-ledger.reserveOperation';
const CTX = { executionId: 'bench-exec', workflowId: 'bench-wf' };

// Rounds per batch size (each round runs every variant once, in a rotating order).
const PLAN = quick
	? [
			{ n: 1, rounds: 40 },
			{ n: 100, rounds: 10 },
			{ n: 1000, rounds: 5 },
			{ n: 10000, rounds: 2, perItemRounds: 1 },
		]
	: [
			{ n: 1, rounds: 300 },
			{ n: 100, rounds: 60 },
			{ n: 1000, rounds: 21 },
			{ n: 10000, rounds: 7, perItemRounds: 3 },
		];

const schema = randomSchema('bench_ledger');
const db = pool(5);
await migrateSchema(db, schema);
const schemaSql = `"${schema}"`;
const creds = credentials(schema);
const reserveNode = new ReserveOperation();
const confirmNode = new ConfirmOperation();
let seq = 0;
/** This process's CPU time (user + system) since `since`, ms: the client's own work, less sensitive to a loaded machine than wall time. */
const cpuMs = (since) => {
	const u = process.cpuUsage(since);
	return (u.user + u.system) / 1000;
};

function inputItems(n, tag) {
	const run = `${tag}-${++seq}`;
	const items = [];
	for (let i = 0; i < n; i++) {
		items.push({ json: { orderId: `order-${run}-${i}`, customerId: `cus_${i % 97}`, amount: 1000 + i, currency: 'EUR' } });
	}
	return { run, items };
}

/** What the HTTP Request node would output for item i: the provider's response body. */
const httpBody = (json, i) => ({ id: `pay_${json.orderId}`, status: 'succeeded', amount: json.amount, currency: json.currency, seq: i });

async function viaNodes(n) {
	const cpu0 = process.cpuUsage();
	const { run, items } = inputItems(n, 'node');
	const rFns = fakeExecute({
		items,
		nodeName: RESERVE_NAME,
		credentials: creds,
		executionId: CTX.executionId,
		workflowId: CTX.workflowId,
		params: orderReserveParams(items),
	});
	const t0 = now();
	const reserved = await reserveNode.execute.call(rFns);
	const t1 = now();
	const proceed = reserved[1]; // output 0 is Unrecorded
	if (proceed.length !== n) throw new Error(`node: ${proceed.length} of ${n} proceeded (${run})`);
	const bodies = proceed.map((it, i) => ({ json: httpBody(it.json, i), pairedItem: { item: i } }));
	const cFns = fakeExecute({
		items: bodies,
		nodeName: 'Confirm Operation',
		credentials: creds,
		executionId: CTX.executionId,
		workflowId: CTX.workflowId,
		parents: [{ name: RESERVE_NAME, type: RESERVE_TYPE }],
		pairedFrom: { [RESERVE_NAME]: (i) => proceed[i] },
		params: {
			outcomeSource: 'httpResult',
			externalReference: (i) => bodies[i].json.id,
			lineage: 'auto',
			options: {},
		},
	});
	const t2 = now();
	const confirmed = await confirmNode.execute.call(cFns);
	const t3 = now();
	if (confirmed[1].length !== n) throw new Error(`node: ${confirmed[1].length} of ${n} confirmed`);
	return { reserve: t1 - t0, confirm: t3 - t2, total: t1 - t0 + (t3 - t2), cpuMs: cpuMs(cpu0) };
}

/** The same documents the nodes send, built before the clock starts. */
function directDocs(n) {
	const { items } = inputItems(n, 'direct');
	const prepared = items.map((it, i) =>
		prepareReserveItem(i, { operationKey: `payment:charge:${it.json.orderId}:v1`, request: it.json, target: 'payments-api', leaseSeconds: 300 }),
	);
	const confirms = items.map((it, i) => {
		const body = httpBody(it.json, i);
		return prepareConfirmItem(i, {
			operationKey: prepared[i].operationKey,
			leaseToken: '00000000-0000-4000-8000-000000000000',
			outcome: 'succeeded',
			externalRef: body.id,
			response: body,
		});
	});
	return { reserveDoc: encodeReserveBatch(prepared), confirms };
}

async function direct(n) {
	const cpu0 = process.cpuUsage();
	const { reserveDoc, confirms } = directDocs(n);
	const rCtx = JSON.stringify({ ...CTX, nodeName: RESERVE_NAME });
	const cCtx = JSON.stringify({ ...CTX, nodeName: 'Confirm Operation' });
	const t0 = now();
	const r = await db.query(reserveSql(ledgerSchemaOf(schema)), [reserveDoc, rCtx]);
	const t1 = now();
	for (const row of r.rows) confirms[row.idx].leaseToken = row.lease_token;
	const c = await db.query(confirmSql(ledgerSchemaOf(schema)), [encodeConfirmBatch(confirms), cCtx]);
	const t2 = now();
	if (r.rows.length !== n || c.rows.some((x) => x.result !== 'recorded')) throw new Error('direct: unexpected result');
	return { reserve: t1 - t0, confirm: t2 - t1, total: t2 - t0, cpuMs: cpuMs(cpu0) };
}

const INSERT_ONE = `INSERT INTO ${schemaSql}.operations
  (operation_key, status, fingerprint, fingerprint_alg, target, request, attempt, idempotency_key, lease_token_hash, lease_expires_at)
  VALUES ($1, 'reserved', $2, $3, $4, $5::jsonb, 1, ${schemaSql}.downstream_idempotency_key($1, 1), sha256(uuid_send($7::uuid)), now() + make_interval(secs => $6))
  ON CONFLICT (operation_key) DO NOTHING
  RETURNING $7::uuid::text AS lease_token`;
const UPDATE_ONE = `UPDATE ${schemaSql}.operations
  SET status = 'succeeded', external_ref = $3, response = $4::jsonb, settled_at = now(), updated_at = now()
  WHERE operation_key = $1 AND lease_token_hash = sha256(uuid_send($2::uuid)) AND status = 'reserved'`;

async function perItem(client, n) {
	const { items } = inputItems(n, 'peritem');
	const prepared = items.map((it, i) =>
		prepareReserveItem(i, { operationKey: `payment:charge:${it.json.orderId}:v1`, request: it.json, target: 'payments-api', leaseSeconds: 300 }),
	);
	const bodies = items.map((it, i) => httpBody(it.json, i));
	const t0 = now();
	const tokens = new Array(n);
	for (let i = 0; i < n; i++) {
		const p = prepared[i];
		const r = await client.query(INSERT_ONE, [p.operationKey, p.fingerprint, FINGERPRINT_ALGORITHM, p.target, p.canonicalRequest, p.leaseSeconds, randomUUID()]);
		tokens[i] = r.rows[0].lease_token;
	}
	const t1 = now();
	for (let i = 0; i < n; i++) {
		await client.query(UPDATE_ONE, [prepared[i].operationKey, tokens[i], bodies[i].id, JSON.stringify(bodies[i])]);
	}
	const t2 = now();
	return { reserve: t1 - t0, confirm: t2 - t1, total: t2 - t0 };
}

const perItemClient = await db.connect();
log(`schema ${schema}; warming up`);
for (let w = 0; w < 3; w++) {
	await viaNodes(100);
	await direct(100);
	await perItem(perItemClient, 100);
}

const batches = [];
// LEDGER_SIZES=1000 (or 100,1000): only these batch sizes (A/B runs of one size against another commit).
const SIZES = process.env.LEDGER_SIZES ? process.env.LEDGER_SIZES.split(',').map(Number) : null;
for (const { n, rounds, perItemRounds = rounds } of PLAN.filter((p) => !SIZES || SIZES.includes(p.n))) {
	const s = { node: [], direct: [], perItem: [], nodeReserve: [], nodeConfirm: [], directReserve: [], directConfirm: [], paired: [], nodeCpu: [], directCpu: [] };
	const t = now();
	for (let r = 0; r < rounds; r++) {
		const order = ['node', 'direct', 'perItem'];
		for (let k = 0; k < r % 3; k++) order.push(order.shift());
		let nodeT;
		let directT;
		for (const v of order) {
			if (v === 'node') {
				const x = await viaNodes(n);
				nodeT = x.total;
				s.node.push(x.total);
				s.nodeReserve.push(x.reserve);
				s.nodeConfirm.push(x.confirm);
				s.nodeCpu.push(x.cpuMs);
			} else if (v === 'direct') {
				const x = await direct(n);
				directT = x.total;
				s.direct.push(x.total);
				s.directReserve.push(x.reserve);
				s.directConfirm.push(x.confirm);
				s.directCpu.push(x.cpuMs);
			} else if (r < perItemRounds) {
				s.perItem.push((await perItem(perItemClient, n)).total);
			}
		}
		s.paired.push(nodeT / directT);
	}
	const node = summarize(s.node);
	const dir = summarize(s.direct);
	const per = summarize(s.perItem);
	const b = {
		n,
		rounds,
		perItemRounds,
		nodeMs: node,
		directMs: dir,
		perItemMs: per,
		nodeReserveMs: summarize(s.nodeReserve),
		nodeConfirmMs: summarize(s.nodeConfirm),
		directReserveMs: summarize(s.directReserve),
		directConfirmMs: summarize(s.directConfirm),
		nodeCpuMs: summarize(s.nodeCpu),
		directCpuMs: summarize(s.directCpu),
		nodeItemsPerSec: round((n / node.median) * 1000, 0),
		directItemsPerSec: round((n / dir.median) * 1000, 0),
		perItemItemsPerSec: round((n / per.median) * 1000, 0),
		nodeOverDirect: round(node.median / dir.median),
		nodeOverDirectPairedMedian: round(summarize(s.paired).median),
		perItemOverNode: round(per.median / node.median, 1),
		seconds: round((now() - t) / 1000, 1),
	};
	batches.push(b);
	log(
		`n=${n}: node ${round(node.median, 2)} ms (p90 ${round(node.p90, 2)}), direct ${round(dir.median, 2)} ms, per-item ${round(per.median, 2)} ms; ` +
			`node/direct ${b.nodeOverDirect}, per-item/node ${b.perItemOverNode}; client CPU node ${round(b.nodeCpuMs.median, 1)} ms, direct ${round(b.directCpuMs.median, 1)} ms (${b.seconds} s)`,
	);
}

const at1000 = batches.find((b) => b.n === 1000) ?? batches.at(-1);
const result = {
	suite: 'ledger-throughput',
	server: await serverInfo(db),
	batches,
	targets: [
		{
			id: 'ledger-node-vs-direct',
			what: 'Reserve+Confirm of 1,000 items through the nodes ≤ 1.15× the direct SQL',
			value: at1000.nodeOverDirect,
			limit: 1.15,
			met: at1000.nodeOverDirect <= 1.15,
		},
		{
			id: 'ledger-node-vs-per-item',
			what: 'Nodes ≥ 10× faster than one statement per item at 1,000 items',
			value: at1000.perItemOverNode,
			limit: 10,
			met: at1000.perItemOverNode >= 10,
		},
	],
};
perItemClient.release();
await db.query(`DROP SCHEMA ${schemaSql} CASCADE`);
await db.end();
await closeAllPools();
writeResult(result);
