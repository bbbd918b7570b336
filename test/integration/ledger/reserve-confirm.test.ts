import { createHash } from 'node:crypto';
import { Pool } from 'pg';
import { prepareReserveItem, reserveOperations, type ReserveItem } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { setLedgerClock, testDatabase, DATABASE_URL } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ max: 4 });
});
afterAll(async () => {
	await db.drop();
});

const reserve = (key: string, request: unknown, leaseSeconds = 60, index = 0): ReserveItem =>
	prepareReserveItem(index, { operationKey: key, request, leaseSeconds, target: 'payments-api' });

async function row(key: string) {
	const { rows } = await db.pool.query(`SELECT * FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [key]);
	return rows[0];
}
async function events(key: string): Promise<string[]> {
	const { rows } = await db.pool.query(`SELECT event FROM ${db.schemaSql}.operation_events WHERE operation_key = $1 ORDER BY event_id`, [key]);
	return rows.map((r) => r.event);
}

describe('Reserve', () => {
	it('proceeds once for a new key, then reports in progress while the lease is live', async () => {
		const [first] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:new', { amount: 1 })]);
		expect(first).toMatchObject({ outcome: 'proceed', status: 'reserved', attempt: 1 });
		expect(first.leaseToken).toMatch(/^[0-9a-f-]{36}$/);
		expect(first.idempotencyKey).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
		const [second] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:new', { amount: 1 })]);
		expect(second).toMatchObject({ outcome: 'in_progress', leaseToken: null });
		expect(await events('k:new')).toEqual(['reserved']);
	});

	it('200 rounds of 32 concurrent Reserves of one new key give exactly one proceed each round', async () => {
		const pool = new Pool({ connectionString: DATABASE_URL, max: 32 });
		try {
			// Open all 32 connections first, so the rounds race on the row and not on connecting.
			const clients = await Promise.all(Array.from({ length: 32 }, () => pool.connect()));
			clients.forEach((c) => c.release());
			const proceedsPerRound: number[] = [];
			for (let round = 0; round < 200; round++) {
				const key = `race:${round}`;
				const results = await Promise.all(
					Array.from({ length: 32 }, (_, n) => reserveOperations(pool, db.ledgerSchema, [reserve(key, { round }, 60, n)])),
				);
				const outcomes = results.map((r) => r[0].outcome);
				proceedsPerRound.push(outcomes.filter((o) => o === 'proceed').length);
				expect(outcomes.filter((o) => o !== 'proceed' && o !== 'in_progress')).toEqual([]);
			}
			expect(proceedsPerRound).toEqual(Array(200).fill(1));
			const { rows } = await db.pool.query(
				`SELECT count(*)::int AS n FROM ${db.schemaSql}.operation_events WHERE operation_key LIKE 'race:%' AND event = 'reserved'`,
			);
			expect(rows[0].n).toBe(200);
		} finally {
			await pool.end();
		}
	}, 120_000);

	it('overlapping batches in random orders, reserving and confirming at once, never deadlock and proceed once per key', async () => {
		const pool = new Pool({ connectionString: DATABASE_URL, max: 8 });
		try {
			const keys = Array.from({ length: 60 }, (_, n) => `mix:${n}`);
			const shuffle = <T,>(a: T[]) => a.map((v) => [Math.random(), v] as const).sort((x, y) => x[0] - y[0]).map((x) => x[1]);
			let proceeds = 0;
			await Promise.all(
				Array.from({ length: 8 }, async () => {
					for (let round = 0; round < 15; round++) {
						const batch = shuffle(keys).slice(0, 40).map((k, i) => reserve(k, { k }, 60, i));
						const out = await reserveOperations(pool, db.ledgerSchema, batch);
						const mine = out.filter((o) => o.outcome === 'proceed');
						proceeds += mine.length;
						await confirmOperations(
							pool,
							db.ledgerSchema,
							shuffle(mine).map((o, i) => prepareConfirmItem(i, { operationKey: batch[o.index].operationKey, leaseToken: o.leaseToken, outcome: 'succeeded', externalRef: `ref-${o.index}` })),
						);
					}
				}),
			);
			expect(proceeds).toBe(60);
			const { rows } = await db.pool.query(
				`SELECT count(*)::int AS n, count(DISTINCT operation_key)::int AS k FROM ${db.schemaSql}.operation_events WHERE operation_key LIKE 'mix:%' AND event = 'reserved'`,
			);
			expect(rows[0]).toEqual({ n: 60, k: 60 });
			const { rows: st } = await db.pool.query(`SELECT DISTINCT status FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'mix:%'`);
			expect(st).toEqual([{ status: 'succeeded' }]);
		} finally {
			await pool.end();
		}
	}, 120_000);

	it('an expired lease is never re-reserved: it becomes unknown atomically and comes back as needs reconcile', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:expire', { a: 1 }, 1)]);
		expect(r.outcome).toBe('proceed');
		// The 1 s lease runs out: the ledger's clock moves 2 s on.
		await setLedgerClock(db.pool, db.schema, 2);
		const again = await Promise.all([1, 2, 3].map(() => reserveOperations(db.pool, db.ledgerSchema, [reserve('k:expire', { a: 1 })])));
		await setLedgerClock(db.pool, db.schema, 0);
		expect(again.map((x) => x[0].outcome)).toEqual(['needs_reconcile', 'needs_reconcile', 'needs_reconcile']);
		expect(again.every((x) => x[0].leaseToken === null)).toBe(true);
		const stored = await row('k:expire');
		expect(stored.status).toBe('unknown');
		expect(stored.attempt).toBe(1);
		expect(await events('k:expire')).toEqual(['reserved', 'lease_expired']);
	});

	it('the same key with a different request is a conflict and never returns the other request\'s result', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:conflict', { amount: 4200 })]);
		const [c] = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'k:conflict', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'pay_1', response: { id: 'pay_1' } }),
		]);
		expect(c.result).toBe('recorded');
		const [x] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:conflict', { amount: 9900 })]);
		expect(x.outcome).toBe('conflict');
		expect(x.externalRef).toBeNull();
		expect(x.response).toBeNull();
		expect(x.leaseToken).toBeNull();
		// What the key is used for (status, attempt) and why it was refused; nothing of the other request.
		expect(x).toMatchObject({ status: 'succeeded', attempt: 1, idempotencyKey: null, leaseExpiresAt: null, retryable: null });
		expect(x.reason).toMatch(/^the operation key was already used with a different request/);
		expect(JSON.stringify(x)).not.toMatch(/4200|9900|pay_1|[0-9a-f]{64}/);
		const [same] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:conflict', JSON.parse('{"amount": 4200.0}'))]);
		expect(same).toMatchObject({ outcome: 'already_succeeded', externalRef: 'pay_1', response: { id: 'pay_1' } });
		expect((await row('k:conflict')).status).toBe('succeeded');
	});

	it('semantically equal JSON (key order, 1.0 vs 1) is the same request, not a conflict', async () => {
		await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:equal', JSON.parse('{"amount":1.0,"currency":"EUR"}'))]);
		const [again] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:equal', JSON.parse('{ "currency" : "EUR", "amount" : 1 }'))]);
		expect(again.outcome).toBe('in_progress');
	});

	it('a confirmed retryable failure may be reserved again with attempt + 1 and a new downstream key; a non-retryable one is reported', async () => {
		const [r1] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:retry', { a: 1 })]);
		await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'k:retry', leaseToken: r1.leaseToken, outcome: 'failed', retryable: true, reason: 'card declined, try later' }),
		]);
		const [r2] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:retry', { a: 1 })]);
		expect(r2).toMatchObject({ outcome: 'proceed', attempt: 2 });
		expect(r2.idempotencyKey).not.toBe(r1.idempotencyKey);
		expect(r2.leaseToken).not.toBe(r1.leaseToken);
		await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'k:retry', leaseToken: r2.leaseToken, outcome: 'failed', retryable: false, reason: 'account closed' }),
		]);
		const [r3] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:retry', { a: 1 })]);
		expect(r3).toMatchObject({ outcome: 'failed_permanently', attempt: 2, reason: 'account closed', retryable: false });
		expect(await events('k:retry')).toEqual(['reserved', 'confirmed_failed', 'reserved', 'confirmed_failed']);
	});

	it('decides a batch in one call, duplicates within the batch included', async () => {
		const items = [reserve('b:1', { n: 1 }, 60, 0), reserve('b:2', { n: 2 }, 60, 1), reserve('b:1', { n: 1 }, 60, 2), reserve('b:1', { n: 9 }, 60, 3)];
		const out = await reserveOperations(db.pool, db.ledgerSchema, items);
		expect(out.map((o) => [o.index, o.outcome])).toEqual([
			[0, 'proceed'],
			[1, 'proceed'],
			[2, 'in_progress'],
			[3, 'conflict'],
		]);
	});

	it('a batch of new keys, known keys and repeats answers every item once, phase 1 and phase 2 alike', async () => {
		// Known keys first: 30 succeeded, 20 still reserved by another holder.
		const known = Array.from({ length: 50 }, (_, n) => reserve(`mix:known:${n}`, { n }, 60, n));
		const held = await reserveOperations(db.pool, db.ledgerSchema, known);
		await confirmOperations(
			db.pool,
			db.ledgerSchema,
			held.slice(0, 30).map((r, n) => prepareConfirmItem(n, { operationKey: known[n].operationKey, leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: `ref-${n}` })),
		);
		// One batch: 100 new keys (phase 1), the 50 known keys and 25 repeats of new keys (phase 2), shuffled.
		const specs: Array<{ key: string; request: unknown; expect: string }> = [];
		for (let n = 0; n < 100; n++) specs.push({ key: `mix:new:${n}`, request: { n }, expect: 'proceed' });
		for (let n = 0; n < 50; n++) specs.push({ key: `mix:known:${n}`, request: { n }, expect: n < 30 ? 'already_succeeded' : 'in_progress' });
		for (let n = 0; n < 25; n++) specs.push({ key: `mix:new:${n * 4}`, request: { n: n * 4 }, expect: 'in_progress' });
		const order = specs.map((_, n) => n).sort((a, b) => ((a * 7919) % 175) - ((b * 7919) % 175));
		const items = order.map((n, i) => reserve(specs[n].key, specs[n].request, 60, i));
		const out = await reserveOperations(db.pool, db.ledgerSchema, items);
		expect(out.map((o) => o.index)).toEqual(items.map((it) => it.index));
		// The first item of a new key proceeds, any later one is a repeat of it.
		const firstOf = new Map<string, number>();
		out.forEach((o, i) => {
			const spec = specs[order[i]];
			const isRepeat = spec.key.startsWith('mix:new:') && firstOf.has(spec.key);
			if (spec.key.startsWith('mix:new:') && !isRepeat) firstOf.set(spec.key, i);
			expect([spec.key, o.outcome]).toEqual([spec.key, spec.key.startsWith('mix:new:') ? (isRepeat ? 'in_progress' : 'proceed') : spec.expect]);
			if (o.outcome === 'proceed') {
				expect(o).toMatchObject({ status: 'reserved', attempt: 1, repeatOfItem: null, externalRef: null, reason: null });
				expect(o.leaseToken).toMatch(/^[0-9a-f-]{36}$/);
				expect(Date.parse(o.leaseExpiresAt ?? '')).toBeGreaterThan(Date.now());
			} else {
				expect(o.leaseToken).toBeNull();
			}
			if (isRepeat) expect(o.repeatOfItem).toBe(firstOf.get(spec.key));
		});
		expect(out.filter((o) => o.outcome === 'proceed')).toHaveLength(100);
		// Every granted lease is the one stored (its hash), and only those 100 reserved events were added.
		const granted = out.filter((o) => o.outcome === 'proceed');
		const { rows } = await db.pool.query(
			`SELECT count(*)::int AS n FROM ${db.schemaSql}.operations o JOIN unnest($1::text[], $2::uuid[]) AS g(k, t)
			    ON o.operation_key = g.k AND o.lease_token_hash = sha256(uuid_send(g.t))`,
			[granted.map((o) => items[o.index].operationKey), granted.map((o) => o.leaseToken)],
		);
		expect(rows[0].n).toBe(100);
		// Confirm in one batch: the 100 holders (phase 1), a wrong token for a known key and an unknown key (phase 2).
		const confirms = [
			...granted.map((o, n) => prepareConfirmItem(n, { operationKey: items[o.index].operationKey, leaseToken: o.leaseToken, outcome: 'succeeded', externalRef: `pay-${n}` })),
			prepareConfirmItem(100, { operationKey: 'mix:known:40', leaseToken: '00000000-0000-4000-8000-000000000000', outcome: 'succeeded', externalRef: 'x' }),
			prepareConfirmItem(101, { operationKey: 'mix:never', leaseToken: '00000000-0000-4000-8000-000000000000', outcome: 'failed' }),
		];
		const done = await confirmOperations(db.pool, db.ledgerSchema, confirms);
		expect(done.map((d) => d.index)).toEqual(confirms.map((c) => c.index));
		expect(done.slice(0, 100).every((d, n) => d.result === 'recorded' && d.status === 'succeeded' && d.externalRef === `pay-${n}` && d.attempt === 1)).toBe(true);
		expect(done.slice(100).map((d) => [d.result, d.possibleDuplicate])).toEqual([
			['stale', true],
			['not_found', false],
		]);
	});

	it('the downstream idempotency key is SHA-256 of "key#attempt" as an RFC 9562 version 8 UUID, the same when recomputed outside', async () => {
		// The rule an operator recomputes it by (docs/high-availability.md): the first 32 hex digits of
		// SHA-256(UTF-8 of key + "#" + attempt), digit 13 set to 8 (version) and digit 17 to 8 (variant).
		const expected = (key: string, attempt: number): string => {
			const h = createHash('sha256').update(`${key}#${attempt}`, 'utf8').digest('hex');
			const u = `${h.slice(0, 12)}8${h.slice(13, 16)}8${h.slice(17, 32)}`;
			return `${u.slice(0, 8)}-${u.slice(8, 12)}-${u.slice(12, 16)}-${u.slice(16, 20)}-${u.slice(20)}`;
		};
		const keys = Array.from({ length: 2000 }, (_, n) => `order:${n}:${['', 'é', '日本', '😀', ' x'][n % 5]}:v${n % 3}`);
		const attempts = keys.map((_, n) => 1 + (n % 7) * 13);
		const { rows } = await db.pool.query<{ k: string }>(
			`SELECT ${db.schemaSql}.downstream_idempotency_key(k, a) AS k FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS x(k, a, n) ORDER BY n`,
			[keys, attempts],
		);
		expect(rows.map((r) => r.k)).toEqual(keys.map((k, n) => expected(k, attempts[n])));
		// What Reserve hands out is that key, for the first attempt and for the next one.
		const [r1] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:dik:é', { a: 1 })]);
		expect(r1.idempotencyKey).toBe(expected('k:dik:é', 1));
		await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 'k:dik:é', leaseToken: r1.leaseToken, outcome: 'failed', retryable: true })]);
		const [r2] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:dik:é', { a: 1 })]);
		expect(r2.idempotencyKey).toBe(expected('k:dik:é', 2));
	});

	it('the hashing helpers of the batch statements are inlined by the planner (no function call per item)', async () => {
		// A SET clause, or a volatility stricter than the body's, would make each a function call per row.
		const { rows } = await db.pool.query<{ 'QUERY PLAN': string }>(
			`EXPLAIN (VERBOSE) SELECT ${db.schemaSql}.downstream_idempotency_key(k, 1), ${db.schemaSql}.ledger_token_hash(gen_random_uuid())
			   FROM unnest(ARRAY['a', 'b']) AS k`,
		);
		const output = rows.map((r) => r['QUERY PLAN']).find((l) => l.trim().startsWith('Output:'));
		expect(output).toMatch(/sha256\(convert_to/);
		expect(output).toMatch(/sha256\(uuid_send/);
		expect(output).not.toMatch(/downstream_idempotency_key|ledger_token_hash/);
	});

	it('records who caused each event', async () => {
		await reserveOperations(db.pool, db.ledgerSchema, [reserve('k:ctx', {}, 60, 7)], { executionId: '123', workflowId: 'wf', nodeName: 'Reserve' });
		const { rows } = await db.pool.query(`SELECT execution_id, workflow_id, node_name, item_index, created_at FROM ${db.schemaSql}.operation_events WHERE operation_key = 'k:ctx'`);
		expect(rows[0]).toMatchObject({ execution_id: '123', workflow_id: 'wf', node_name: 'Reserve', item_index: 7 });
	});
});

describe('Confirm', () => {
	it('repeating the same confirmation is harmless', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:repeat', {})]);
		const item = prepareConfirmItem(0, { operationKey: 'c:repeat', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'ref-1' });
		const [a] = await confirmOperations(db.pool, db.ledgerSchema, [item]);
		const [b] = await confirmOperations(db.pool, db.ledgerSchema, [item]);
		expect(a.result).toBe('recorded');
		expect(b).toMatchObject({ result: 'repeated', status: 'succeeded', externalRef: 'ref-1', possibleDuplicate: false });
		expect(await events('c:repeat')).toEqual(['reserved', 'confirmed_succeeded']);
	});

	it('a stale lease token cannot overwrite a confirmed row and is flagged', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:stale', {})]);
		await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:stale', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'pay_A' }),
		]);
		const stranger = '11111111-2222-4333-8444-555555555555';
		const [s] = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:stale', leaseToken: stranger, outcome: 'succeeded', externalRef: 'pay_B' }),
		]);
		expect(s).toMatchObject({ result: 'stale', status: 'succeeded', externalRef: 'pay_A', possibleDuplicate: true });
		const [f] = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:stale', leaseToken: stranger, outcome: 'failed', reason: 'x' }),
		]);
		expect(f).toMatchObject({ result: 'stale', possibleDuplicate: false });
		// The holder itself contradicting its own recorded success is flagged too.
		const [own] = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:stale', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'pay_C' }),
		]);
		expect(own).toMatchObject({ result: 'stale', possibleDuplicate: true });
		const stored = await row('c:stale');
		expect(stored).toMatchObject({ status: 'succeeded', external_ref: 'pay_A' });
		expect(await events('c:stale')).toEqual(['reserved', 'confirmed_succeeded', 'stale_confirmation', 'stale_confirmation', 'stale_confirmation']);
	});

	it('a late success from the holder of an expired lease is evidence: recorded and flagged late', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:late', {}, 1)]);
		await setLedgerClock(db.pool, db.schema, 2); // the 1 s lease has run out
		await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:late', {})]); // moves it to unknown
		const [c] = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:late', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'pay_L' }),
		]);
		await setLedgerClock(db.pool, db.schema, 0);
		expect(c).toMatchObject({ result: 'recorded', status: 'succeeded', late: true });
		expect(await events('c:late')).toEqual(['reserved', 'lease_expired', 'confirmed_succeeded']);
	});

	it('a stale success after a retry was reserved is flagged as a possible duplicate and changes nothing', async () => {
		const [r1] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:dup', {})]);
		await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 'c:dup', leaseToken: r1.leaseToken, outcome: 'failed', retryable: true })]);
		const [r2] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:dup', {})]);
		const [late] = await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:dup', leaseToken: r1.leaseToken, outcome: 'succeeded', externalRef: 'pay_old' }),
		]);
		expect(late).toMatchObject({ result: 'stale', status: 'reserved', possibleDuplicate: true });
		const held = await row('c:dup');
		expect(held.lease_token).toBeUndefined();
		expect(held.lease_token_hash).toEqual(createHash('sha256').update(Buffer.from(String(r2.leaseToken).replace(/-/g, ''), 'hex')).digest());
	});

	it('unknown then unknown again is one transition; not_found is reported per item', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:unk', {})]);
		const u = prepareConfirmItem(0, { operationKey: 'c:unk', leaseToken: r.leaseToken, outcome: 'unknown', reason: 'HTTP 504' });
		const missing = prepareConfirmItem(1, { operationKey: 'c:missing', leaseToken: r.leaseToken, outcome: 'succeeded' });
		const out = await confirmOperations(db.pool, db.ledgerSchema, [u, missing]);
		expect(out.map((o) => o.result)).toEqual(['recorded', 'not_found']);
		const [again] = await confirmOperations(db.pool, db.ledgerSchema, [u]);
		expect(again.result).toBe('repeated');
		expect(await row('c:unk')).toMatchObject({ status: 'unknown', reason: 'HTTP 504' });
		expect(await events('c:unk')).toEqual(['reserved', 'confirmed_unknown']);
	});

	it('stores a truncated response with the reference kept', async () => {
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [reserve('c:big', {})]);
		await confirmOperations(db.pool, db.ledgerSchema, [
			prepareConfirmItem(0, { operationKey: 'c:big', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'pay_big', response: { s: 'z'.repeat(4000) }, maxResponseBytes: 500 }),
		]);
		const stored = await row('c:big');
		expect(stored).toMatchObject({ status: 'succeeded', external_ref: 'pay_big', response_truncated: true });
		expect(stored.response).toMatchObject({ truncated: true, originalBytes: 4008 });
	});
});

describe('event log', () => {
	it('is append-only', async () => {
		await reserveOperations(db.pool, db.ledgerSchema, [reserve('e:1', {})]);
		await expect(db.pool.query(`UPDATE ${db.schemaSql}.operation_events SET event = 'x'`)).rejects.toThrow(/append-only/);
		await expect(db.pool.query(`DELETE FROM ${db.schemaSql}.operation_events`)).rejects.toThrow(/append-only/);
	});
});
