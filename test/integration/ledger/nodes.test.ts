/**
 * The n8n layer of Reserve and Confirm against a real Postgres: parameters, outputs, pairedItem,
 * continueOnFail, item-level errors that write nothing, and automatic lineage.
 */
import type { INodeExecutionData } from 'n8n-workflow';
import { ReserveOperation } from '../../../nodes/ReserveOperation/ReserveOperation.node';
import { ConfirmOperation } from '../../../nodes/ConfirmOperation/ConfirmOperation.node';
import { closeAllPools } from '../../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';
import { Client } from 'pg';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase();
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const reserveParams = (extra: Record<string, unknown> = {}) => ({
	keyMode: 'parts',
	resource: 'payment',
	action: 'charge',
	entity: (i: number) => items[i]?.json.orderId,
	version: 'v1',
	target: 'payments-api',
	requestSource: 'custom',
	request: (i: number) => ({ amount: items[i]?.json.amount }),
	leaseSeconds: 60,
	...extra,
});
let items: INodeExecutionData[] = [];

async function runReserve(input: INodeExecutionData[], opts: { continueOnFail?: boolean; params?: Record<string, unknown> } = {}) {
	items = input;
	const fns = fakeExecute({
		items: input,
		params: reserveParams(opts.params),
		credentials: testCredentials(DATABASE_URL, db.schema),
		continueOnFail: opts.continueOnFail,
		nodeName: 'Reserve Operation',
	});
	return new ReserveOperation().execute.call(fns);
}
async function count(table: 'operations' | 'operation_events', like: string): Promise<number> {
	const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.${table} WHERE operation_key LIKE $1`, [like]);
	return rows[0].n;
}

describe('Reserve Operation node', () => {
	it('routes each outcome to its own output with pairedItem and the ledger fields', async () => {
		const out = await runReserve([
			{ json: { orderId: 'n-1', amount: 10 } },
			{ json: { orderId: 'n-2', amount: 20 } },
			{ json: { orderId: 'n-1', amount: 10 } },
			{ json: { orderId: 'n-1', amount: 99 } },
		]);
		// Unrecorded, then Proceed, Done Before, In Progress, Reconcile, Conflict, Failed Before.
		expect(out).toHaveLength(7);
		expect(out[0]).toEqual([]);
		expect(out[1].map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		expect(out[1][0].json).toMatchObject({
			orderId: 'n-1',
			amount: 10,
			ledger: { operationKey: 'payment:charge:n-1:v1', outcome: 'proceed', attempt: 1, replay: false },
		});
		expect(out[1][0].json.ledger).toHaveProperty('leaseToken');
		expect(out[1][0].json.ledger).toHaveProperty('idempotencyKey');
		expect(out[3].map((i) => i.pairedItem)).toEqual([{ item: 2 }]);
		expect(out[5].map((i) => i.pairedItem)).toEqual([{ item: 3 }]);
		// Conflict: what the key is used for and why this request was refused; nothing of the other
		// request (no reference, response, idempotency key, lease, fingerprint or request).
		expect(out[5][0].json.ledger).toEqual({
			operationKey: 'payment:charge:n-1:v1',
			outcome: 'conflict',
			status: 'reserved',
			attempt: 1,
			leaseToken: null,
			leaseExpiresAt: null,
			idempotencyKey: null,
			externalRef: null,
			replay: false,
			reason: expect.stringMatching(/^the operation key was already used with a different request/),
			nextStep: expect.stringMatching(/nothing was sent\. Fix the key or the request/),
		});
	});

	it('an empty key is an item-level error that writes nothing (the whole batch waits for valid input)', async () => {
		const before = await count('operations', 'payment:charge:e-%');
		await expect(runReserve([{ json: { orderId: 'e-1', amount: 1 } }, { json: { orderId: '', amount: 2 } }])).rejects.toThrow(/part "entity" is empty/);
		expect(await count('operations', 'payment:charge:e-%')).toBe(before);
		expect(await count('operation_events', 'payment:charge:e-%')).toBe(0);
	});

	it('with continueOnFail the bad item becomes an error item (paired) and the others are reserved', async () => {
		const out = await runReserve(
			[{ json: { orderId: 'f-1', amount: 1 } }, { json: { orderId: '', amount: 2 } }, { json: { orderId: 'f-3', amount: 3 } }],
			{ continueOnFail: true },
		);
		// The error item goes to Unrecorded (output 0), never to Proceed.
		expect(out[0]).toEqual([{ json: { error: expect.stringMatching(/part "entity" is empty/), retryable: false }, pairedItem: { item: 1 } }]);
		expect(out[1].every((i) => !('error' in i.json))).toBe(true);
		expect(out[1].map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 2 }]);
		expect(await count('operations', 'payment:charge:f-%')).toBe(2);
	});

	it('a request that is not JSON is an item-level error naming the value', async () => {
		await expect(
			runReserve([{ json: { orderId: 'g-1' } }], { params: { requestSource: 'custom', request: () => ({ when: new Date(0) }) } }),
		).rejects.toMatchObject({ message: expect.stringMatching(/request\.when: is a Date/), context: { itemIndex: 0 } });
		expect(await count('operations', 'payment:charge:g-%')).toBe(0);
	});

	it('a custom key mode with a missing key fails clearly', async () => {
		await expect(runReserve([{ json: {} }], { params: { keyMode: 'custom', operationKey: '' } })).rejects.toThrow(/operation key is empty/);
	});
});

describe('Confirm Operation node', () => {
	async function runConfirm(
		input: INodeExecutionData[],
		reserved: INodeExecutionData[],
		opts: { continueOnFail?: boolean; params?: Record<string, unknown> } = {},
	) {
		const fns = fakeExecute({
			items: input,
			params: {
				outcomeSource: 'httpResult',
				externalReference: (i: number) => (input[i].json as { id?: string }).id ?? '',
				lineage: 'auto',
				options: {},
				...opts.params,
			},
			credentials: testCredentials(DATABASE_URL, db.schema),
			continueOnFail: opts.continueOnFail,
			nodeName: 'Confirm Operation',
			parents: [
				{ name: 'Charge Payment', type: 'n8n-nodes-base.httpRequest' },
				{ name: 'Reserve Operation', type: 'n8n-nodes-operation-ledger.reserveOperation' },
			],
			pairedFrom: { 'Reserve Operation': (i) => reserved[(input[i].pairedItem as { item: number }).item] },
		});
		return new ConfirmOperation().execute.call(fns);
	}

	it('a replay (Done Before) carries no lease: leaseToken and leaseExpiresAt are null', async () => {
		const r = await runReserve([{ json: { orderId: 'dn-1', amount: 5 } }]);
		await runConfirm([{ json: { id: 'pay_dn' }, pairedItem: { item: 0 } }], r[1]);
		const again = await runReserve([{ json: { orderId: 'dn-1', amount: 5 } }]);
		const replay = again.flat().find((i) => (i.json.ledger as { outcome: string }).outcome === 'already_succeeded');
		expect(replay?.json.ledger).toMatchObject({ status: 'succeeded', attempt: 1, externalRef: 'pay_dn', replay: true, leaseToken: null, leaseExpiresAt: null });
	});

	it('401 and 429 are retryable failures by default; a status code override changes one code', async () => {
		const r = await runReserve([
			{ json: { orderId: 'ov-1', amount: 1 } },
			{ json: { orderId: 'ov-2', amount: 2 } },
			{ json: { orderId: 'ov-3', amount: 3 } },
		]);
		const httpOut: INodeExecutionData[] = [
			{ json: { error: { message: '401 - "bad key"', httpCode: '401' } }, pairedItem: { item: 0 } },
			{ json: { error: { message: '429 - "slow down"', httpCode: '429' } }, pairedItem: { item: 1 } },
			{ json: { error: { message: '409 - "conflict"', httpCode: '409' } }, pairedItem: { item: 2 } },
		];
		const out = await runConfirm(httpOut, r[1], { params: { options: { statusOverrides: '409=failed' } } });
		expect(out[2].map((i) => [i.pairedItem, (i.json.ledger as { status: string }).status])).toEqual([
			[{ item: 0 }, 'failed'],
			[{ item: 1 }, 'failed'],
			[{ item: 2 }, 'failed'],
		]);
		const { rows } = await db.pool.query(
			`SELECT operation_key, retryable FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:ov-%' ORDER BY operation_key`,
		);
		expect(rows.map((x) => x.retryable)).toEqual([true, true, false]);
		// The Failed items say so themselves (ledger.retryable).
		expect(out[2].map((i) => (i.json.ledger as { retryable: unknown }).retryable)).toEqual([true, true, false]);
		// The next Reserve of the 401 key proceeds as attempt 2 (after a credential fix).
		const again = await runReserve([{ json: { orderId: 'ov-1', amount: 1 } }]);
		expect(again[1][0].json.ledger).toMatchObject({ outcome: 'proceed', attempt: 2 });
		// A malformed override is an item error; nothing is written.
		const bad = await runConfirm([{ json: { id: 'x' }, pairedItem: { item: 0 } }], again[1], { continueOnFail: true, params: { options: { statusOverrides: '409=maybe' } } });
		// The error item goes to Unrecorded, never to Succeeded.
		expect(bad.slice(1).flat()).toHaveLength(0);
		expect(bad[0]).toHaveLength(1);
		expect(String(bad[0][0].json.error)).toMatch(/Status code override "409=maybe"/);
	});

	it('after an HTTP Request node, finds the reservation through paired items and classifies the result', async () => {
		const r = await runReserve([
			{ json: { orderId: 'h-1', amount: 1 } },
			{ json: { orderId: 'h-2', amount: 2 } },
			{ json: { orderId: 'h-3', amount: 3 } },
			{ json: { orderId: 'h-4', amount: 4 } },
		]);
		const proceed = r[1];
		// What an HTTP Request node (On Error: Continue) emits: the body, or an error item.
		const httpOut: INodeExecutionData[] = [
			{ json: { id: 'pay_h1', status: 'succeeded' }, pairedItem: { item: 0 } },
			{ json: { error: { message: '422 - "invalid amount"', httpCode: '422' } }, pairedItem: { item: 1 } },
			{ json: { error: { message: 'timeout of 10000ms exceeded', code: 'ECONNABORTED' } }, pairedItem: { item: 2 } },
			{ json: { id: 'pay_h4' }, pairedItem: { item: 3 } },
		];
		const out = await runConfirm(httpOut, proceed);
		expect(out[0]).toEqual([]);
		expect(out[1].map((i) => [i.pairedItem, (i.json.ledger as { externalRef: string }).externalRef])).toEqual([
			[{ item: 0 }, 'pay_h1'],
			[{ item: 3 }, 'pay_h4'],
		]);
		expect(out[2].map((i) => i.pairedItem)).toEqual([{ item: 1 }]);
		expect(out[2][0].json.ledger).toMatchObject({ status: 'failed', reason: expect.stringMatching(/HTTP 422/) });
		expect(out[3].map((i) => i.pairedItem)).toEqual([{ item: 2 }]);
		const { rows } = await db.pool.query(
			`SELECT operation_key, status, external_ref, response FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:h-%' ORDER BY 1`,
		);
		expect(rows.map((x) => [x.status, x.external_ref])).toEqual([
			['succeeded', 'pay_h1'],
			['failed', null],
			['unknown', null],
			['succeeded', 'pay_h4'],
		]);
		expect(rows[0].response).toEqual({ id: 'pay_h1', status: 'succeeded' });

		// A second run of the same Confirm is harmless; a Reserve now replays the stored success.
		const again = await runConfirm(httpOut.slice(0, 1), proceed);
		expect(again[1][0].json.ledger).toMatchObject({ result: 'repeated', status: 'succeeded' });
		const replay = await runReserve([{ json: { orderId: 'h-1', amount: 1 } }]);
		expect(replay[2][0].json.ledger).toMatchObject({ outcome: 'already_succeeded', replay: true, externalRef: 'pay_h1', response: { id: 'pay_h1' } });
	});

	it('Stop on a busy key gives back the leases the same batch granted, so a rerun proceeds instead of finding them held', async () => {
		await runReserve([{ json: { orderId: 'busy-1', amount: 1 } }]);
		// Another session holds busy-1's row; the batch is [busy-2 (new), busy-1 (locked), busy-3 (new)].
		const other = new Client({ connectionString: DATABASE_URL });
		await other.connect();
		await other.query('BEGIN');
		await other.query(`SELECT 1 FROM ${db.schemaSql}.operations WHERE operation_key = 'payment:charge:busy-1:v1' FOR UPDATE`);
		const input = [{ json: { orderId: 'busy-2', amount: 2 } }, { json: { orderId: 'busy-1', amount: 1 } }, { json: { orderId: 'busy-3', amount: 3 } }];
		items = input;
		const fns = fakeExecute({
			items: input,
			params: reserveParams(),
			credentials: testCredentials(DATABASE_URL, db.schema, { lockTimeoutMs: 300 }),
			nodeName: 'Reserve Operation',
		});
		let err: unknown;
		try {
			err = await new ReserveOperation().execute.call(fns).then(
				() => null,
				(e: unknown) => e,
			);
		} finally {
			await other.query('ROLLBACK');
			await other.end();
		}
		expect(err).toMatchObject({ message: expect.stringMatching(/could not decide operation key "payment:charge:busy-1:v1"/) });
		expect((err as { description: string }).description).toMatch(/The 2 other item\(s\) of this batch that had been given a lease were released/);
		const { rows } = await db.pool.query(
			`SELECT operation_key, status, retryable, reason FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:busy-%' ORDER BY 1`,
		);
		expect(rows.map((r) => [r.operation_key, r.status, r.retryable])).toEqual([
			['payment:charge:busy-1:v1', 'reserved', null],
			['payment:charge:busy-2:v1', 'failed', true],
			['payment:charge:busy-3:v1', 'failed', true],
		]);
		expect(rows[1].reason).toMatch(/^Not sent: Reserve Operation stopped the workflow/);
		// The rerun (or n8n's Retry On Fail) proceeds with the released keys as attempt 2.
		const again = await runReserve([{ json: { orderId: 'busy-2', amount: 2 } }, { json: { orderId: 'busy-3', amount: 3 } }]);
		expect(again[1].map((i) => (i.json.ledger as { attempt: number }).attempt)).toEqual([2, 2]);
	});

	it('a text body (full response, Response Format: Text) is stored as text, even when it is not JSON', async () => {
		const r = await runReserve([{ json: { orderId: 't-1', amount: 1 } }, { json: { orderId: 't-2', amount: 2 } }]);
		const httpOut: INodeExecutionData[] = [
			{ json: { statusCode: 200, headers: {}, body: 'OK id=pay_t1', id: 'pay_t1' }, pairedItem: { item: 0 } },
			{ json: { statusCode: 201, headers: {}, body: '{"id":"pay_t2","id":"dup"}', id: 'pay_t2' }, pairedItem: { item: 1 } },
		];
		const out = await runConfirm(httpOut, r[1]);
		expect(out[1].map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		const { rows } = await db.pool.query(
			`SELECT status, external_ref, response FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:t-%' ORDER BY 1, 2`,
		);
		expect(rows).toEqual([
			{ status: 'succeeded', external_ref: 'pay_t1', response: 'OK id=pay_t1' },
			{ status: 'succeeded', external_ref: 'pay_t2', response: '{"id":"pay_t2","id":"dup"}' },
		]);
	});

	it('with two Reserve nodes upstream it follows the nearest one (n8n lists parents furthest first)', async () => {
		const outer = await runReserve([{ json: { orderId: 'two-outer', amount: 1 } }]);
		const inner = await runReserve([{ json: { orderId: 'two-inner', amount: 1 } }]);
		const fns = fakeExecute({
			items: [{ json: { id: 'pay_inner' }, pairedItem: { item: 0 } }],
			params: { outcomeSource: 'httpResult', externalReference: 'pay_inner', lineage: 'auto', options: {} },
			credentials: testCredentials(DATABASE_URL, db.schema),
			nodeName: 'Confirm Operation',
			parents: [
				{ name: 'Reserve Order', type: 'n8n-nodes-operation-ledger.reserveOperation' },
				{ name: 'Notify', type: 'n8n-nodes-base.httpRequest' },
				{ name: 'Reserve Payment', type: 'n8n-nodes-operation-ledger.reserveOperation' },
				{ name: 'Charge Payment', type: 'n8n-nodes-base.httpRequest' },
			],
			pairedFrom: { 'Reserve Order': () => outer[1][0], 'Reserve Payment': () => inner[1][0] },
		});
		const out = await new ConfirmOperation().execute.call(fns);
		expect(out[1][0].json.ledger).toMatchObject({ operationKey: 'payment:charge:two-inner:v1', status: 'succeeded' });
		const { rows } = await db.pool.query(
			`SELECT operation_key, status FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:two-%' ORDER BY 1`,
		);
		expect(rows.map((r) => [r.operation_key, r.status])).toEqual([
			['payment:charge:two-inner:v1', 'succeeded'],
			['payment:charge:two-outer:v1', 'reserved'],
		]);
	});

	it('an unserialisable response is an item-level error that writes nothing; continueOnFail emits it paired', async () => {
		const r = await runReserve([{ json: { orderId: 'u-1', amount: 1 } }, { json: { orderId: 'u-2', amount: 2 } }]);
		const httpOut: INodeExecutionData[] = [
			{ json: { id: 'pay_u1', big: BigInt(7) as unknown as number }, pairedItem: { item: 0 } },
			{ json: { id: 'pay_u2' }, pairedItem: { item: 1 } },
		];
		await expect(runConfirm(httpOut, r[1])).rejects.toMatchObject({ message: expect.stringMatching(/response\.big: is a BigInt/) });
		const { rows: before } = await db.pool.query(`SELECT status FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:u-%'`);
		expect(before.map((x) => x.status)).toEqual(['reserved', 'reserved']);

		const out = await runConfirm(httpOut, r[1], { continueOnFail: true });
		// The error item goes to Unrecorded (records nothing), never to Succeeded.
		expect(out[0]).toEqual([{ json: { error: expect.stringMatching(/cannot be stored/), retryable: false }, pairedItem: { item: 0 } }]);
		expect(out[1]).toEqual([expect.objectContaining({ pairedItem: { item: 1 } })]);
		const { rows } = await db.pool.query(`SELECT operation_key, status FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'payment:charge:u-%' ORDER BY 1`);
		expect(rows.map((x) => x.status)).toEqual(['reserved', 'succeeded']);
	});

	it('an item that never held a lease (not from Proceed) is refused clearly', async () => {
		await runReserve([{ json: { orderId: 'p-1', amount: 1 } }]);
		const replayed = await runReserve([{ json: { orderId: 'p-1', amount: 1 } }]);
		const inProgress = replayed[3];
		await expect(
			runConfirm([{ json: inProgress[0].json, pairedItem: { item: 0 } }], inProgress, { params: { outcomeSource: 'explicit', outcome: 'succeeded' } }),
		).rejects.toThrow(/Proceed/);
	});

	it('explicit lineage and explicit outcome work without any Reserve node upstream', async () => {
		const r = await runReserve([{ json: { orderId: 'x-1', amount: 1 } }]);
		const ledger = r[1][0].json.ledger as { operationKey: string; leaseToken: string };
		const fns = fakeExecute({
			items: [{ json: { whatever: true } }],
			params: {
				lineage: 'explicit',
				operationKey: ledger.operationKey,
				leaseToken: ledger.leaseToken,
				outcomeSource: 'explicit',
				outcome: 'failed',
				retryable: false,
				reason: 'rejected by policy',
				externalReference: '',
				options: { storeResponse: false },
			},
			credentials: testCredentials(DATABASE_URL, db.schema),
		});
		const out = await new ConfirmOperation().execute.call(fns);
		expect(out[2][0].json.ledger).toMatchObject({ status: 'failed', result: 'recorded' });
		const replay = await runReserve([{ json: { orderId: 'x-1', amount: 1 } }]);
		expect(replay[6][0].json.ledger).toMatchObject({ outcome: 'failed_permanently', reason: 'rejected by policy' });
	});

	it('a stale confirmation goes to the Stale output, flagged', async () => {
		const r = await runReserve([{ json: { orderId: 's-1', amount: 1 } }]);
		const fake = { ...r[1][0].json, ledger: { ...(r[1][0].json.ledger as object), leaseToken: '11111111-2222-4333-8444-555555555555' } };
		const out = await runConfirm([{ json: { id: 'pay_s1' }, pairedItem: { item: 0 } }], [{ json: fake }]);
		expect(out[4][0].json.ledger).toMatchObject({ stale: true, possibleDuplicate: true, status: 'reserved' });
	});
});

describe('the settle window at the node layer', () => {
	it('Reserve: a same-batch repeat says which item holds the lease; the settle window is stored', async () => {
		const out = await runReserve(
			[
				{ json: { orderId: 'i11-1', amount: 5 } },
				{ json: { orderId: 'i11-1', amount: 5 } },
			],
			{ params: { settleSeconds: 45 } },
		);
		expect(out[1]).toHaveLength(1);
		expect(out[3]).toHaveLength(1);
		expect(out[3][0].json.ledger).toMatchObject({ outcome: 'in_progress', repeatOfItem: 0, reason: expect.stringMatching(/repeat in this batch/) });
		const { rows } = await db.pool.query(`SELECT settle_seconds FROM ${db.schemaSql}.operations WHERE operation_key = 'payment:charge:i11-1:v1'`);
		expect(rows[0].settle_seconds).toBe(45);
	});

	it('Reserve: a key part with trailing white space is an item error, not trimmed into another key', async () => {
		const out = await runReserve([{ json: { orderId: 'ent-X ', amount: 1 } }, { json: { orderId: 'ent-Y', amount: 1 } }], { continueOnFail: true });
		// The error item goes to Unrecorded, never to Proceed.
		expect(out[1].map((i) => (i.json.ledger as { outcome: string }).outcome)).toEqual(['proceed']);
		expect(out.flat().filter((i) => i.json.error).map((i) => i.json.error)).toEqual([expect.stringMatching(/white space/)]);
		expect(out[0].map((i) => i.json.error)).toEqual([expect.stringMatching(/white space/)]);
		expect(await count('operations', 'payment:charge:ent-X%')).toBe(0);
	});

	it('Reserve: a key locked past the credential lock timeout is a retry-safe item error; other keys are decided', async () => {
		await runReserve([{ json: { orderId: 'lk-1', amount: 1 } }]);
		const { Client } = await import('pg');
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		await c.query('BEGIN');
		await c.query(`SELECT 1 FROM ${db.schemaSql}.operations WHERE operation_key = 'payment:charge:lk-1:v1' FOR UPDATE`);
		try {
			items = [
				{ json: { orderId: 'lk-1', amount: 1 } },
				{ json: { orderId: 'lk-2', amount: 1 } },
			];
			const fns = fakeExecute({
				items,
				params: reserveParams(),
				credentials: testCredentials(DATABASE_URL, db.schema, { lockTimeoutMs: 200, statementTimeoutMs: 5000 }),
				continueOnFail: true,
				nodeName: 'Reserve Operation',
			});
			const t0 = Date.now();
			const out = await new ReserveOperation().execute.call(fns);
			expect(Date.now() - t0).toBeLessThan(3000);
			expect(out[1].filter((i) => i.json.error)).toHaveLength(0);
			const errors = out.flat().filter((i) => i.json.error);
			expect(out[0]).toEqual(errors);
			expect(errors).toHaveLength(1);
			expect(errors[0].pairedItem).toEqual({ item: 0 });
			expect(String(errors[0].json.error)).toMatch(/locked by another transaction.*running it again is safe/);
			expect(out[1].filter((i) => !i.json.error).map((i) => i.pairedItem)).toEqual([{ item: 1 }]);
		} finally {
			await c.query('ROLLBACK');
			await c.end();
		}
	});
});
