/**
 * Issue 24: a write that ran again in another execution than the one its lease was granted to.
 * n8n's "Retry (from node with error)" and the editor's partial runs feed a stored Proceed item to
 * the write node in a NEW execution; Confirm then reports on a lease another execution holds,
 * whose own outcome was never reported. Against a real Postgres:
 *   - Reserve records the lease's execution (lease_execution_id);
 *   - the holder's own report is recorded as before;
 *   - a success reported by another execution goes to review, flagged as a possible duplicate,
 *     with the reference kept and an event; List "possible_duplicate" shows it; the next Reserve
 *     answers Reconcile (never Proceed), and Settle by Hand settles it;
 *   - a failure or unknown reported by another execution makes the operation unknown (the first
 *     execution may have sent it): never failed, so the next Reserve never proceeds;
 *   - a stale report of a success the row does not hold marks the row too.
 */
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { listOperations, checkListOptions } from '../../../src/ledger/admin/list';
import { settleByHand, prepareSettleItem } from '../../../src/ledger/admin/settle';
import { setLedgerClock, testDatabase } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_other_exec' });
});
afterAll(async () => {
	await db.drop();
});

const A = { executionId: '101', workflowId: 'wf', nodeName: 'Reserve', executionMode: 'webhook' };
const B = { executionId: '102', workflowId: 'wf', nodeName: 'Confirm', executionMode: 'retry' };
const row = async (k: string) => (await db.pool.query(`SELECT * FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [k])).rows[0];
const events = async (k: string) =>
	(await db.pool.query(`SELECT event, from_status, to_status, execution_id, detail FROM ${db.schemaSql}.operation_events WHERE operation_key = $1 ORDER BY event_id`, [k])).rows;

async function reserve(k: string, ctx = A) {
	const [r] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: k, request: { k }, leaseSeconds: 60, settleSeconds: 5, target: 'payments-api' })], ctx);
	return r;
}
async function confirm(k: string, token: string, outcome: 'succeeded' | 'failed' | 'unknown', ctx: typeof A, ref: string | null = null, retryable = true) {
	const [c] = await confirmOperations(
		db.pool,
		db.ledgerSchema,
		[prepareConfirmItem(0, { operationKey: k, leaseToken: token, outcome, externalRef: ref, reason: outcome === 'succeeded' ? null : 'HTTP 504', retryable, response: { id: ref } })],
		ctx,
	);
	return c;
}

test('Reserve records the execution the lease was granted to; a re-reserve after a retryable failure records the new one', async () => {
	const k = 'oe:lease-exec';
	const r = await reserve(k);
	expect((await row(k)).lease_execution_id).toBe('101');
	await confirm(k, r.leaseToken!, 'failed', A);
	const again = await reserve(k, { ...A, executionId: '103' });
	expect(again.outcome).toBe('proceed');
	expect((await row(k)).lease_execution_id).toBe('103');
});

test("the lease's own execution confirms as before: succeeded, no mark", async () => {
	const k = 'oe:own';
	const r = await reserve(k);
	const c = await confirm(k, r.leaseToken!, 'succeeded', { ...A, nodeName: 'Confirm' }, 'pay_1');
	expect(c).toMatchObject({ result: 'recorded', status: 'succeeded', possibleDuplicate: false });
	expect((await row(k)).possible_duplicate_at).toBeNull();
});

test('a success reported by another execution goes to review as a possible duplicate; Reserve then answers Reconcile; Settle by Hand settles it', async () => {
	const k = 'oe:retry-success';
	const r = await reserve(k);
	const c = await confirm(k, r.leaseToken!, 'succeeded', B, 'pay_2');
	expect(c).toMatchObject({ result: 'recorded', status: 'review', possibleDuplicate: true, externalRef: 'pay_2' });
	const stored = await row(k);
	expect(stored).toMatchObject({ status: 'review', external_ref: 'pay_2', lease_execution_id: '101' });
	expect(stored.possible_duplicate_at).not.toBeNull();
	expect(stored.reason).toMatch(/possible duplicate: execution 102 \(mode retry\) reported the write succeeded on the lease granted to execution 101/);
	const ev = (await events(k)).at(-1);
	expect(ev).toMatchObject({ event: 'possible_duplicate', from_status: 'reserved', to_status: 'review', execution_id: '102' });
	expect(ev.detail).toMatchObject({ reported: 'succeeded', externalRef: 'pay_2', leaseExecutionId: '101', executionMode: 'retry' });

	// Repeating the same report changes nothing more.
	const again = await confirm(k, r.leaseToken!, 'succeeded', B, 'pay_2');
	expect(again.result).toBe('stale');
	expect((await row(k)).status).toBe('review');

	const page = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'possible_duplicate', limit: 100 }));
	expect(page.items.map((i) => i.operation_key)).toContain(k);
	const reviewPage = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'review', limit: 100 }));
	expect(reviewPage.items.map((i) => i.operation_key)).toContain(k);

	const next = await reserve(k, { ...A, executionId: '104' });
	expect(next.outcome).toBe('needs_reconcile');
	expect(next.status).toBe('review');

	const [s] = await settleByHand(db.pool, db.ledgerSchema, [prepareSettleItem(0, { operationKey: k, decision: 'happened', externalRef: 'pay_2', reason: 'one charge at the provider', decidedBy: 'ops@example.com' })]);
	expect(s).toMatchObject({ result: 'settled', status: 'succeeded' });
	expect((await reserve(k, { ...A, executionId: '105' })).outcome).toBe('already_succeeded');
	// The mark stays, for the record.
	expect((await row(k)).possible_duplicate_at).not.toBeNull();
});

test.each(['failed', 'unknown'] as const)('%s reported by another execution makes the operation unknown, never failed: the next Reserve answers Reconcile', async (outcome) => {
	const k = `oe:retry-${outcome}`;
	const r = await reserve(k);
	const c = await confirm(k, r.leaseToken!, outcome, B);
	expect(c).toMatchObject({ result: 'recorded', status: 'unknown', possibleDuplicate: false });
	const stored = await row(k);
	expect(stored.status).toBe('unknown');
	expect(stored.reason).toMatch(new RegExp(`execution 102 reported ${outcome} on the lease granted to execution 101, which may have sent the write`));
	expect(stored.settle_until).not.toBeNull();
	expect((await events(k)).at(-1)).toMatchObject({ event: 'confirmed_unknown', to_status: 'unknown', detail: expect.objectContaining({ otherExecution: true, reported: outcome }) });
	expect((await reserve(k, { ...A, executionId: '106' })).outcome).toBe('needs_reconcile');
	// A second report from the other execution: repeated, recorded as an event.
	const again = await confirm(k, r.leaseToken!, outcome, B);
	expect(again).toMatchObject({ result: 'repeated', status: 'unknown' });
	expect((await events(k)).at(-1)).toMatchObject({ event: 'other_execution_report' });
});

test('another execution reporting after the lease ended: the row goes unknown through the lease expiry first, then to review for a success', async () => {
	const k = 'oe:late-other';
	const r = await reserve(k);
	await setLedgerClock(db.pool, db.schema, 120);
	try {
		const c = await confirm(k, r.leaseToken!, 'succeeded', B, 'pay_9');
		expect(c).toMatchObject({ result: 'recorded', status: 'review', possibleDuplicate: true, late: true });
		expect((await events(k)).map((e) => e.event).slice(-2)).toEqual(['lease_expired', 'possible_duplicate']);
	} finally {
		await setLedgerClock(db.pool, db.schema, 0);
	}
});

test('without an execution id on either side (direct core calls), nothing is taken for another execution', async () => {
	const k = 'oe:no-ids';
	const [r] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: k, request: { k }, leaseSeconds: 60 })], {});
	expect((await row(k)).lease_execution_id).toBeNull();
	const c = await confirm(k, r.leaseToken!, 'succeeded', B, 'pay_x');
	expect(c).toMatchObject({ result: 'recorded', status: 'succeeded', possibleDuplicate: false });
});

test('a stale report of a success the row does not hold marks the row (listable), its status unchanged', async () => {
	const k = 'oe:stale-dup';
	const r = await reserve(k);
	await confirm(k, r.leaseToken!, 'succeeded', { ...A, nodeName: 'Confirm' }, 'pay_a');
	const c = await confirm(k, r.leaseToken!, 'succeeded', { ...A, nodeName: 'Confirm' }, 'pay_b');
	expect(c).toMatchObject({ result: 'stale', possibleDuplicate: true, status: 'succeeded' });
	const stored = await row(k);
	expect(stored.status).toBe('succeeded');
	expect(stored.external_ref).toBe('pay_a');
	expect(stored.possible_duplicate_at).not.toBeNull();
	const page = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'possible_duplicate', limit: 100 }));
	expect(page.items.map((i) => i.operation_key)).toContain(k);
});
