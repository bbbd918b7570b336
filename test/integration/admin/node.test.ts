import { OperationLedgerAdmin } from '../../../nodes/OperationLedgerAdmin/OperationLedgerAdmin.node';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { closeAllPools } from '../../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_adminnode' });
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const node = new OperationLedgerAdmin();
/** Runs the node; its outputs are [Unrecorded, Result, Settled, Refused] for every operation. */
function run(params: Record<string, unknown>, items = [{ json: {} }], continueOnFail = false) {
	return node.execute.call(
		fakeExecute({ items, params, credentials: testCredentials(DATABASE_URL, db.schema), continueOnFail, nodeName: 'Ledger Admin', executionId: 'exec-admin' }),
	);
}
async function makeUnknown(key: string) {
	const [r] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: key, request: { key }, leaseSeconds: 60, target: 'node' })]);
	await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: key, leaseToken: r.leaseToken, outcome: 'unknown', reason: 'timeout' })]);
}

describe('Operation Ledger Admin node', () => {
	it('fails closed: output 0 is Unrecorded, the same four outputs for every operation', () => {
		const d = node.description;
		expect(d.usableAsTool).toBeUndefined();
		expect(d.outputs).toEqual(['Unrecorded', 'Result', 'Settled', 'Refused'].map((displayName) => ({ type: 'main', displayName })));
	});

	it('Settle by Hand: only what the database settled in this run reaches Settled; repeats go to Refused naming who decided', async () => {
		await makeUnknown('n:1');
		await makeUnknown('n:2');
		const items = [
			{ json: { key: 'n:1', by: 'alice' } },
			{ json: { key: 'n:1', by: 'bob' } },
			{ json: { key: 'n:2', by: '' } },
		];
		const params = {
			operation: 'settle',
			operationKey: (i: number) => items[i].json.key,
			decision: 'happened',
			externalReference: 'pay_n1',
			reason: 'seen in the dashboard',
			decidedBy: (i: number) => items[i].json.by,
		};
		const [notRecorded, result, settled, refused] = await run(params, items, true);
		expect(result).toEqual([]);
		// Item 2 has no person: Unrecorded (never a go-ahead), and nothing was written for it.
		expect(settled.map((s) => [s.pairedItem, (s.json.ledger as { decidedBy: string }).decidedBy])).toEqual([[{ item: 0 }, 'alice']]);
		expect(notRecorded.map((s) => [s.pairedItem, typeof s.json.error])).toEqual([[{ item: 2 }, 'string']]);
		expect(refused).toHaveLength(1);
		expect(refused[0].json.ledger).toMatchObject({ result: 'refused', decidedBy: 'alice', requestedBy: 'bob' });
		expect(String((refused[0].json.ledger as { refusal: string }).refusal)).toMatch(/by alice/);
		const n2 = await db.pool.query(`SELECT status FROM ${db.schemaSql}.operations WHERE operation_key = 'n:2'`);
		expect(n2.rows[0].status).toBe('unknown');
		// Without continueOnFail a bad item throws before anything is written.
		await expect(run({ ...params, decidedBy: '' }, [{ json: { key: 'n:2', by: '' } }])).rejects.toThrow(/Decided By/);
		// A missing key is never reported as settled.
		const [nr2, res2, s2, r2] = await run({ ...params, operationKey: 'n:missing', decidedBy: 'alice' }, [{ json: {} }], true);
		expect(nr2).toEqual([{ json: { error: expect.stringMatching(/No operation exists/), retryable: false }, pairedItem: { item: 0 } }]);
		expect(res2).toEqual([]);
		expect(s2).toEqual([]);
		expect(r2).toEqual([]);
		// A failed batch (here: the schema cannot be reached) is Unrecorded too, never Settled.
		const broken = await node.execute.call(
			fakeExecute({
				items: [{ json: {} }],
				params: { ...params, operationKey: 'n:3', decidedBy: 'alice' },
				credentials: testCredentials(DATABASE_URL, `${db.schema}_missing`, { autoApplySchema: false }),
				continueOnFail: true,
			}),
		);
		expect(broken.map((o) => o.length)).toEqual([1, 0, 0, 0]);
		expect(String(broken[0][0].json.error)).toMatch(/nothing of this batch was recorded/);
	});

	it('Get, List, Health through the node', async () => {
		const [gotErrors, got] = await run({ operation: 'get', operationKey: 'n:1', maxEvents: 100 });
		expect(gotErrors).toEqual([]);
		expect(got[0].json).toMatchObject({ found: true, operation: { status: 'succeeded', settled_by: 'alice' } });
		expect((got[0].json.events as Array<{ event: string }>).map((e) => e.event)).toEqual(['reserved', 'confirmed_unknown', 'settled_by_hand', 'settle_by_hand_refused']);
		const [, missing] = await run({ operation: 'get', operationKey: 'n:none' });
		expect(missing[0].json).toEqual({ found: false, operationKey: 'n:none' });
		await makeUnknown('n:3');
		const [, list] = await run({ operation: 'list', kind: 'unknown', target: 'node', limit: 10, listOutput: 'items' });
		expect(list.map((i) => i.json.operation_key)).toEqual(['n:2', 'n:3']);
		expect(list[0].json.page).toMatchObject({ total: 2, nextCursor: null });
		const [, page] = await run({ operation: 'list', kind: 'unknown', target: 'node', limit: 1, listOutput: 'page' });
		expect(page[0].json).toMatchObject({ total: 2, count: 1 });
		const [, next] = await run({ operation: 'list', kind: 'unknown', target: 'node', limit: 1, listOutput: 'page', cursor: page[0].json.nextCursor });
		expect((next[0].json.items as Array<{ operation_key: string }>).map((i) => i.operation_key)).toEqual(['n:3']);
		const [, health] = await run({ operation: 'health', days: 2 });
		const [badList, noList] = await run({ operation: 'list', kind: 'everything' }, [{ json: {} }], true);
		expect(noList).toEqual([]);
		expect(String(badList[0].json.error)).toMatch(/list must be/);
		expect(health[0].json).toMatchObject({ byStatus: { unknown: 2, succeeded: 1 } });
	});

	it('Hard Delete refuses without the acknowledgement; Compact reports its batches', async () => {
		await expect(run({ operation: 'hardDelete', acknowledge: false, olderThanDays: 30 })).rejects.toThrow(/acknowledgement/);
		const [, out] = await run({ operation: 'compact', olderThanDays: 30, batchSize: 10, maxBatches: 5, maxDurationSeconds: 10, statementTimeoutMs: 5000 });
		expect(out[0].json).toMatchObject({ mode: 'compact', batches: 1, operations: 0, stoppedBecause: 'done', more: false });
		// With the acknowledgement, hard delete removes settled operations older than N days, and only those.
		await db.pool.query(`UPDATE ${db.schemaSql}.operations SET settled_at = now() - interval '40 days' WHERE operation_key = 'n:1'`);
		const [, del] = await run({ operation: 'hardDelete', acknowledge: true, olderThanDays: 30, batchSize: 10, maxBatches: 5, maxDurationSeconds: 10, statementTimeoutMs: 5000 });
		expect(del[0].json).toMatchObject({ mode: 'hard_delete', operations: 1, stoppedBecause: 'done' });
		const left = await db.pool.query(`SELECT operation_key FROM ${db.schemaSql}.operations ORDER BY 1`);
		expect(left.rows.map((r) => r.operation_key)).toEqual(['n:2', 'n:3']);
	});

	it('Settle by Hand inside the settle window: Did Not Happen goes to Refused with when the window ends; with the override, to Settled', async () => {
		await makeUnknown('w:1');
		const params = { operation: 'settle', operationKey: 'w:1', decision: 'not_happened', externalReference: '', reason: 'nothing at the bank', decidedBy: 'hana' };
		const early = await run(params, [{ json: {} }], true);
		expect(early.map((o) => o.length)).toEqual([0, 0, 0, 1]);
		const ledger = early[3][0].json.ledger as Record<string, unknown>;
		expect(ledger).toMatchObject({ operationKey: 'w:1', result: 'refused_early', status: 'unknown', requestedBy: 'hana', requestedDecision: 'not_happened' });
		expect(String(ledger.refusal)).toMatch(/settle window ends at /);
		expect(Date.parse(String(ledger.settleUntil))).toBeGreaterThan(Date.now());
		const now = await run({ ...params, beforeSettleWindowEnd: true }, [{ json: {} }], true);
		expect(now.map((o) => o.length)).toEqual([0, 0, 1, 0]);
		expect(now[2][0].json.ledger).toMatchObject({ result: 'settled', status: 'failed', decidedBy: 'hana' });
	});

	it('a missing key\'s error never cuts the key inside a surrogate pair', async () => {
		const key = `${'k'.repeat(199)}\u{1F600}tail`;
		const [unrecorded] = await run({ operation: 'settle', operationKey: key, decision: 'happened', externalReference: 'pay', reason: 'r', decidedBy: 'x' }, [{ json: {} }], true);
		const message = String(unrecorded[0].json.error);
		expect(message).toContain(`"${'k'.repeat(199)}"`);
		expect(message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
	});

	it('the fixed outputs [Unrecorded, Result, Settled, Refused]: each operation fills only its own', async () => {
		await makeUnknown('fx:1');
		const params = {
			operation: 'settle',
			operationKey: 'fx:1',
			decision: 'not_happened',
			externalReference: '',
			reason: 'no charge in the dashboard',
			decidedBy: 'carol',
			beforeSettleWindowEnd: true,
		};
		const first = await run(params, [{ json: {} }], true);
		expect(first.map((o) => o.length)).toEqual([0, 0, 1, 0]);
		expect(first[2][0].json.ledger).toMatchObject({ operationKey: 'fx:1', result: 'settled', status: 'failed', decidedBy: 'carol' });
		// The same decision again: refused (index 3), nothing written.
		const again = await run({ ...params, decidedBy: 'dave' }, [{ json: {} }], true);
		expect(again.map((o) => o.length)).toEqual([0, 0, 0, 1]);
		expect(again[3][0].json.ledger).toMatchObject({ result: 'refused', decidedBy: 'carol', requestedBy: 'dave' });
		// Bad input and a missing key: Unrecorded (index 0), never Settled.
		const bad = await run({ ...params, operationKey: 'fx:missing' }, [{ json: {} }], true);
		expect(bad.map((o) => o.length)).toEqual([1, 0, 0, 0]);
		expect(String(bad[0][0].json.error)).toMatch(/No operation exists/);
		// A look-up answers on Result (index 1) only.
		const got = await run({ operation: 'get', operationKey: 'fx:1', maxEvents: 10 }, [{ json: {} }], false);
		expect(got.map((o) => o.length)).toEqual([0, 1, 0, 0]);
		expect(got[1][0].json).toMatchObject({ found: true, operation: { status: 'failed', settled_by: 'carol' } });
		const health = await run({ operation: 'health', days: 2 }, [{ json: {} }], false);
		expect(health.map((o) => o.length)).toEqual([0, 1, 0, 0]);
		const badList = await run({ operation: 'list', kind: 'everything' }, [{ json: {} }], true);
		expect(badList.map((o) => o.length)).toEqual([1, 0, 0, 0]);
		const compact = await run({ operation: 'compact', olderThanDays: 30, batchSize: 10, maxBatches: 5, maxDurationSeconds: 10, statementTimeoutMs: 5000 }, [{ json: {} }], false);
		expect(compact.map((o) => o.length)).toEqual([0, 1, 0, 0]);
	});
});
