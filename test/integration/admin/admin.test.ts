import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { claimUnknown } from '../../../src/ledger/reconcile/claim';
import { prepareResolveItem, resolveUnknown } from '../../../src/ledger/reconcile/resolve';
import { checkListOptions, listOperations } from '../../../src/ledger/admin/list';
import { checkRetentionOptions, RetentionError, runRetention } from '../../../src/ledger/admin/retention';
import { getOperation } from '../../../src/ledger/admin/get';
import { ledgerHealth } from '../../../src/ledger/admin/health';
import { prepareSettleItem, refusalMessage, settleByHand } from '../../../src/ledger/admin/settle';
import { closeAllPools } from '../../../src/db/pool';
import { setLedgerClock, testDatabase } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_admin' });
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const ctx = { executionId: 'exec-1', workflowId: 'wf-1', nodeName: 'Test' };
const reserve = (key: string, request: unknown = { key }, leaseSeconds = 60, target = 'pay') =>
	reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: key, request, leaseSeconds, target })], ctx).then((r) => r[0]);
async function confirm(key: string, leaseToken: string | null, outcome: 'succeeded' | 'failed' | 'unknown', extra: Record<string, unknown> = {}) {
	return (await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: key, leaseToken, outcome, ...extra })], ctx))[0];
}
async function makeUnknown(key: string, target = 'pay') {
	const r = await reserve(key, { key }, 60, target);
	await confirm(key, r.leaseToken, 'unknown', { reason: 'HTTP 504' });
	return r;
}
/** Claims due unknown operations of `target` once their settle window (120 s by default) has passed, by moving the ledger clock for the claim only. */
async function claimDue(target: string, limit = 1) {
	await setLedgerClock(db.pool, db.schema, 600);
	try {
		return await claimUnknown(db.pool, db.ledgerSchema, { limit, settleSeconds: 0, claimSeconds: 3600, target });
	} finally {
		await setLedgerClock(db.pool, db.schema, 0);
	}
}
async function makeReview(key: string) {
	await makeUnknown(key, 'rev');
	const [c] = await claimDue('rev');
	expect(c.operationKey).toBe(key);
	const [res] = await resolveUnknown(
		db.pool,
		db.ledgerSchema,
		[prepareResolveItem(0, { operationKey: key, claimToken: c.claimToken, resolution: 'still_unknown', reason: 'lookup 500' })],
		{ maxChecks: 1, backoffBaseSeconds: 1, backoffMaxSeconds: 1 },
	);
	expect(res.result).toBe('review');
}
const settle = (key: string, decision: string, by = 'alice', ref: string | null = 'pay_1', reason = 'checked the dashboard', beforeSettleWindowEnd = false) =>
	settleByHand(db.pool, db.ledgerSchema, [prepareSettleItem(0, { operationKey: key, decision, externalRef: ref, reason, decidedBy: by, beforeSettleWindowEnd })], ctx).then((r) => r[0]);
/** Runs `fn` with the ledger clock 600 s ahead: past every default settle window (120 s) of operations made now. */
async function afterTheWindow<T>(fn: () => Promise<T>): Promise<T> {
	await setLedgerClock(db.pool, db.schema, 600);
	try {
		return await fn();
	} finally {
		await setLedgerClock(db.pool, db.schema, 0);
	}
}
const row = async (key: string) => (await db.pool.query(`SELECT * FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [key])).rows[0];
const eventCount = async (key: string) =>
	Number((await db.pool.query(`SELECT count(*) FROM ${db.schemaSql}.operation_events WHERE operation_key = $1`, [key])).rows[0].count);
/** Moves an operation's settlement and events `days` into the past (instead of waiting). */
async function age(keyPrefix: string, days: number) {
	await db.pool.query(`UPDATE ${db.schemaSql}.operations SET settled_at = settled_at - make_interval(days => $2) WHERE operation_key LIKE $1`, [`${keyPrefix}%`, days]);
	// Events are append-only; the test database's superuser moves their clock with the trigger off.
	await db.pool.query(`ALTER TABLE ${db.schemaSql}.operation_events DISABLE TRIGGER USER`);
	await db.pool.query(`UPDATE ${db.schemaSql}.operation_events SET created_at = created_at - make_interval(days => $2) WHERE operation_key LIKE $1`, [`${keyPrefix}%`, days]);
	await db.pool.query(`ALTER TABLE ${db.schemaSql}.operation_events ENABLE TRIGGER USER`);
}
const compact = (days = 30, more: Record<string, unknown> = {}) =>
	runRetention(db.pool, db.ledgerSchema, checkRetentionOptions({ mode: 'compact', olderThanDays: days, batchSize: 100, ...more }), ctx);

describe('Get', () => {
	it('returns the operation with its events in order: who, which execution and node, when, what changed', async () => {
		const r = await reserve('g:1');
		await confirm('g:1', r.leaseToken, 'succeeded', { externalRef: 'pay_g1', response: { id: 'pay_g1' } });
		const got = await getOperation(db.pool, db.ledgerSchema, 'g:1');
		expect(got?.operation).toMatchObject({ operation_key: 'g:1', status: 'succeeded', external_ref: 'pay_g1', response: { id: 'pay_g1' } });
		expect(got?.operation).not.toHaveProperty('lease_token');
		expect(got?.eventsTotal).toBe(2);
		expect(got?.events.map((e) => [e.event, e.fromStatus, e.toStatus, e.executionId, e.nodeName])).toEqual([
			['reserved', null, 'reserved', 'exec-1', 'Test'],
			['confirmed_succeeded', 'reserved', 'succeeded', 'exec-1', 'Test'],
		]);
		expect(Date.parse(got!.events[0].at)).not.toBeNaN();
		expect(await getOperation(db.pool, db.ledgerSchema, 'g:none')).toBeNull();
		await expect(getOperation(db.pool, db.ledgerSchema, '')).rejects.toThrow(/empty/);
	});
});

describe('List', () => {
	it('pages unknown operations oldest first by keyset, with a total, and filters by age', async () => {
		for (let n = 0; n < 5; n++) await makeUnknown(`l:${n}`, 'list');
		const first = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'unknown', target: 'list', limit: 2 }));
		expect(first.total).toBe(5);
		expect(first.items.map((i) => i.operation_key)).toEqual(['l:0', 'l:1']);
		expect(first.items[0]).not.toHaveProperty('request');
		// A row added meanwhile does not shift the pages.
		await makeUnknown('l:5', 'list');
		const second = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'unknown', target: 'list', limit: 2, cursor: first.nextCursor }));
		expect(second.items.map((i) => i.operation_key)).toEqual(['l:2', 'l:3']);
		const third = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'unknown', target: 'list', limit: 3, cursor: second.nextCursor }));
		expect(third.items.map((i) => i.operation_key)).toEqual(['l:4', 'l:5']);
		expect(third.nextCursor).toBeNull();
		const old = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'unknown', target: 'list', minAgeSeconds: 3600 }));
		expect(old).toEqual({ total: 0, items: [], nextCursor: null });
		expect(() => checkListOptions({ kind: 'unknown', cursor: 'nope' })).toThrow(/cursor/);
		expect(() => checkListOptions({ kind: 'everything' })).toThrow(/list must be/);
	});

	it('lists review, expired leases and failed operations', async () => {
		await makeReview('l:rev');
		await reserve('l:lease', {}, 1, 'lease-list');
		const f = await reserve('l:failed', {}, 60, 'failed-list');
		await confirm('l:failed', f.leaseToken, 'failed', { reason: 'HTTP 400', retryable: false });
		// The 1 s lease runs out on the ledger clock (put back in the finally below).
		await setLedgerClock(db.pool, db.schema, 2);
		try {
			const review = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'review', target: 'rev' }));
			expect(review.items.map((i) => i.operation_key)).toEqual(['l:rev']);
			const lease = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'expired_lease', target: 'lease-list' }));
			expect(lease.items.map((i) => [i.operation_key, i.status])).toEqual([['l:lease', 'reserved']]);
			const failed = await listOperations(db.pool, db.ledgerSchema, checkListOptions({ kind: 'failed', target: 'failed-list' }));
			expect(failed.items.map((i) => [i.operation_key, i.reason])).toEqual([['l:failed', 'HTTP 400']]);
		} finally {
			await setLedgerClock(db.pool, db.schema, 0);
		}
	});
});

describe('Settle by hand', () => {
	it('happened: succeeded with the reference, recorded with who and why; the next Reserve replays it', async () => {
		await makeUnknown('s:happened');
		const r = await settle('s:happened', 'happened', 'alice', 'pay_42', 'found in dashboard');
		expect(r).toMatchObject({ result: 'settled', status: 'succeeded', externalRef: 'pay_42', decidedBy: 'alice', decision: 'happened' });
		expect(await reserve('s:happened')).toMatchObject({ outcome: 'already_succeeded', externalRef: 'pay_42' });
		const got = await getOperation(db.pool, db.ledgerSchema, 's:happened');
		const ev = got!.events.find((e) => e.event === 'settled_by_hand');
		expect(ev).toMatchObject({ fromStatus: 'unknown', toStatus: 'succeeded', executionId: 'exec-1', detail: { decidedBy: 'alice', reason: 'found in dashboard', externalRef: 'pay_42' } });
		expect(got!.operation.settled_by).toBe('alice');
	});

	it('did not happen (from review): a retryable failure, so the next Reserve proceeds with attempt 2', async () => {
		await makeReview('s:nothappened');
		// (Its reconciliation ran with the clock moved past the settle window; so does this decision.)
		const r = await afterTheWindow(() => settle('s:nothappened', 'not_happened', 'bob', null, 'no such charge at the bank'));
		expect(r).toMatchObject({ result: 'settled', status: 'failed', retryable: true, decidedBy: 'bob' });
		const again = await reserve('s:nothappened');
		expect(again).toMatchObject({ outcome: 'proceed', attempt: 2 });
		// The person decided the previous attempt, not this one: once it succeeds, a refusal names its Confirm.
		await confirm('s:nothappened', again.leaseToken, 'succeeded', { externalRef: 'pay_2' });
		const late = await settle('s:nothappened', 'not_happened', 'carol');
		expect(late).toMatchObject({ result: 'refused', status: 'succeeded', decision: 'confirmed_succeeded', decidedBy: 'node "Test" in execution exec-1' });
	});

	it('the first decision wins; later ones are refused naming who decided, and are recorded', async () => {
		await makeUnknown('s:race');
		const people = ['ann', 'ben', 'cat', 'dan', 'eve', 'fay'];
		const results = await afterTheWindow(() => Promise.all(people.map((p, n) => settle('s:race', n % 2 ? 'happened' : 'not_happened', p, `pay_${p}`))));
		const winners = results.filter((r) => r.result === 'settled');
		expect(winners).toHaveLength(1);
		const who = winners[0].decidedBy;
		for (const r of results.filter((x) => x.result === 'refused')) {
			expect(r.decidedBy).toBe(who);
			expect(refusalMessage(r)).toContain(who!);
		}
		const events = (await getOperation(db.pool, db.ledgerSchema, 's:race'))!.events.map((e) => e.event);
		expect(events.filter((e) => e === 'settled_by_hand')).toHaveLength(1);
		expect(events.filter((e) => e === 'settle_by_hand_refused')).toHaveLength(5);
	});

	it('only from unknown or review: a confirmed success or a live reservation is refused and unchanged', async () => {
		const r = await reserve('s:done');
		await confirm('s:done', r.leaseToken, 'succeeded', { externalRef: 'pay_done' });
		const refused = await settle('s:done', 'not_happened', 'mallory');
		expect(refused).toMatchObject({ result: 'refused', status: 'succeeded', externalRef: 'pay_done', decision: 'confirmed_succeeded' });
		expect(refused.decidedBy).toBe('node "Test" in execution exec-1');
		await reserve('s:live');
		expect(await settle('s:live', 'happened')).toMatchObject({ result: 'refused', status: 'reserved' });
		expect((await row('s:live')).status).toBe('reserved');
		expect(await settle('s:missing', 'happened')).toMatchObject({ result: 'not_found' });
	});

	it('a reconciler whose claim was overtaken by a person cannot overwrite the decision', async () => {
		await makeUnknown('s:claimed', 'claimed');
		const [c] = await claimDue('claimed');
		await settle('s:claimed', 'happened', 'alice', 'pay_c');
		const [res] = await resolveUnknown(
			db.pool,
			db.ledgerSchema,
			[prepareResolveItem(0, { operationKey: 's:claimed', claimToken: c.claimToken, resolution: 'not_happened' })],
			{ maxChecks: 3, backoffBaseSeconds: 1, backoffMaxSeconds: 1 },
		);
		expect(res.result).toBe('claim_lost');
		expect(await row('s:claimed')).toMatchObject({ status: 'succeeded', external_ref: 'pay_c' });
	});

	it("a late Confirm from the original holder cannot overwrite a person's decision, and a contradicting success is flagged", async () => {
		const r = await makeUnknown('s:late');
		await afterTheWindow(() => settle('s:late', 'not_happened', 'dora', null, 'nothing at the provider'));
		const late = await confirm('s:late', r.leaseToken, 'succeeded', { externalRef: 'pay_late' });
		expect(late).toMatchObject({ result: 'stale', possibleDuplicate: true, status: 'failed' });
		expect(await row('s:late')).toMatchObject({ status: 'failed', retryable: true, settled_by: 'dora', external_ref: null });
	});

	it('respects the settle window: "did not happen" right after the operation went unknown (window 120 s) is refused, as Reconcile refuses it', async () => {
		await makeUnknown('s:early');
		const r = await settle('s:early', 'not_happened', 'erin', null, 'not in the dashboard yet');
		expect(r).toMatchObject({ result: 'refused_early', status: 'unknown', decidedBy: null });
		const until = (await row('s:early')).settle_until as Date;
		expect(r.settleUntil).toBe(until.toISOString());
		expect(refusalMessage(r)).toMatch(/refused until the operation's settle window ends at .*Decide Before the Settle Window Ends/);
		// Nothing changed: the next Reserve is still told to reconcile (not a second write as attempt 2).
		expect(await row('s:early')).toMatchObject({ status: 'unknown', settled_by: null });
		expect(await reserve('s:early')).toMatchObject({ outcome: 'needs_reconcile', attempt: 1 });
		const events = (await getOperation(db.pool, db.ledgerSchema, 's:early'))!.events;
		expect(events[events.length - 1]).toMatchObject({ event: 'settle_by_hand_refused_early', detail: { decidedBy: 'erin', decision: 'not_happened' } });
		// Reconcile Unknown refuses the same decision: its claim is not even due yet.
		expect(await claimUnknown(db.pool, db.ledgerSchema, { limit: 10, settleSeconds: 0, claimSeconds: 60, target: 'pay' })).toEqual([]);
		// "Happened" brings the reference as evidence and is taken inside the window.
		await makeUnknown('s:early-happened');
		expect(await settle('s:early-happened', 'happened', 'erin', 'pay_77')).toMatchObject({ result: 'settled', status: 'succeeded' });
	});

	it('after the settle window ends, "did not happen" is taken; before it only with the explicit override, which the event records', async () => {
		await makeUnknown('s:window');
		expect(await afterTheWindow(() => settle('s:window', 'not_happened', 'finn', null, 'no charge'))).toMatchObject({ result: 'settled', status: 'failed' });
		let ev = (await getOperation(db.pool, db.ledgerSchema, 's:window'))!.events.find((e) => e.event === 'settled_by_hand');
		expect(ev?.detail).not.toHaveProperty('beforeSettleWindowEnd');

		await makeUnknown('s:override');
		const r = await settle('s:override', 'not_happened', 'gwen', null, 'the provider was down the whole time (status page)', true);
		expect(r).toMatchObject({ result: 'settled', status: 'failed', retryable: true, decidedBy: 'gwen' });
		ev = (await getOperation(db.pool, db.ledgerSchema, 's:override'))!.events.find((e) => e.event === 'settled_by_hand');
		const until = (await row('s:override')).settle_until as Date;
		expect(ev?.detail).toMatchObject({ decidedBy: 'gwen', beforeSettleWindowEnd: true });
		expect(new Date((ev?.detail as { settleUntil: string }).settleUntil).getTime()).toBe(until.getTime());
		expect(await reserve('s:override')).toMatchObject({ outcome: 'proceed', attempt: 2 });
		expect(() => prepareSettleItem(0, { operationKey: 'k', decision: 'not_happened', reason: 'r', decidedBy: 'x', beforeSettleWindowEnd: 'yes' })).toThrow(/must be true or false/);
	});

	it('records which database role wrote each event (db_role), whatever the caller names as the person', async () => {
		await makeUnknown('s:role');
		await settle('s:role', 'happened', 'the CFO', 'pay_cfo');
		const { rows } = await db.pool.query(`SELECT current_user AS me`);
		const events = (await getOperation(db.pool, db.ledgerSchema, 's:role'))!.events;
		expect(events.length).toBeGreaterThan(2);
		for (const e of events) expect(e.dbRole).toBe(rows[0].me);
	});

	it('waits for a row another transaction holds no longer than the lock timeout, and records nothing then', async () => {
		await makeUnknown('s:held');
		const holder = await db.pool.connect();
		try {
			await holder.query('BEGIN');
			await holder.query(`SELECT 1 FROM ${db.schemaSql}.operations WHERE operation_key = 's:held' FOR UPDATE`);
			const t = Date.now();
			await expect(
				settleByHand(db.pool, db.ledgerSchema, [prepareSettleItem(0, { operationKey: 's:held', decision: 'happened', externalRef: 'p', reason: 'r', decidedBy: 'a' })], ctx, {
					statementTimeoutMs: 5000,
					lockTimeoutMs: 200,
				}),
			).rejects.toThrow(/did not answer in time.*lock timeout \(200 ms\)/);
			expect(Date.now() - t).toBeLessThan(3000);
		} finally {
			await holder.query('ROLLBACK');
			holder.release();
		}
		expect(await row('s:held')).toMatchObject({ status: 'unknown', settled_by: null });
	});

	it('bad input writes nothing', () => {
		const base = { operationKey: 'k', decision: 'happened', externalRef: 'x', reason: 'r', decidedBy: 'a' };
		expect(() => prepareSettleItem(0, { ...base, decidedBy: ' ' })).toThrow(/Decided By/);
		expect(() => prepareSettleItem(0, { ...base, reason: '' })).toThrow(/reason/);
		expect(() => prepareSettleItem(0, { ...base, externalRef: '' })).toThrow(/reference/);
		expect(() => prepareSettleItem(0, { ...base, decision: 'maybe' })).toThrow(/happened or not_happened/);
		expect(() => prepareSettleItem(0, { ...base, operationKey: '' })).toThrow(/empty/);
	});
});

describe('Health', () => {
	it('counts by status, oldest unknown, review backlog, events per day and table sizes', async () => {
		const h = await ledgerHealth(db.pool, db.ledgerSchema, 3);
		expect(h.byStatus.unknown).toBeGreaterThan(0);
		expect(h.oldestUnknown?.key).toBeDefined();
		expect(h.review.count).toBeGreaterThanOrEqual(0);
		expect(h.eventsPerDay.length).toBeGreaterThanOrEqual(1);
		expect(h.eventsPerDay[h.eventsPerDay.length - 1].events).toBeGreaterThan(0);
		expect(h.sizes.operationsBytes).toBeGreaterThan(0);
		expect(h.sizes.operationEventsBytes).toBeGreaterThan(0);
	});
});

describe('Retention', () => {
	it('compaction keeps the promise: a late retry is answered Done Before, another request is a Conflict', async () => {
		const r = await reserve('c:paid', { amount: 10 });
		await confirm('c:paid', r.leaseToken, 'succeeded', { externalRef: 'pay_c1', response: { id: 'pay_c1', big: 'x'.repeat(5000) } });
		await age('c:paid', 40);
		const report = await compact(30);
		expect(report.operations).toBeGreaterThanOrEqual(1);
		expect(report.stoppedBecause).toBe('done');
		const after = await row('c:paid');
		expect(after).toMatchObject({ status: 'succeeded', external_ref: 'pay_c1', request: null, response: null });
		expect(after.compacted_at).not.toBeNull();
		expect(after.fingerprint).toBe(prepareReserveItem(0, { operationKey: 'c:paid', request: { amount: 10 }, leaseSeconds: 60 }).fingerprint);
		expect(await eventCount('c:paid')).toBe(0);
		expect(await reserve('c:paid', { amount: 10 })).toMatchObject({ outcome: 'already_succeeded', externalRef: 'pay_c1' });
		expect(await reserve('c:paid', { amount: 11 })).toMatchObject({ outcome: 'conflict' });
	});

	it('never touches unknown, review, reserved or recently settled operations; keeps the request of a retryable failure', async () => {
		await makeUnknown('c:unknown');
		await reserve('c:live');
		const f = await reserve('c:retry', { amount: 5 });
		await confirm('c:retry', f.leaseToken, 'failed', { reason: 'HTTP 503', retryable: true });
		const s = await reserve('c:recent');
		await confirm('c:recent', s.leaseToken, 'succeeded', { externalRef: 'pay_recent' });
		await age('c:retry', 40);
		await db.pool.query(`UPDATE ${db.schemaSql}.operations SET created_at = created_at - interval '40 days' WHERE operation_key IN ('c:unknown', 'c:live')`);
		await compact(30);
		expect(await row('c:unknown')).toMatchObject({ status: 'unknown', compacted_at: null, request: { key: 'c:unknown' } });
		expect(await row('c:live')).toMatchObject({ status: 'reserved', compacted_at: null });
		expect(await row('c:recent')).toMatchObject({ compacted_at: null });
		const retry = await row('c:retry');
		expect(retry.compacted_at).not.toBeNull();
		expect(retry.request).toEqual({ amount: 5 });
		// Retried: a live operation again, out of the compacted set.
		const again = await reserve('c:retry', { amount: 5 });
		expect(again).toMatchObject({ outcome: 'proceed', attempt: 2 });
		expect(await row('c:retry')).toMatchObject({ compacted_attempt: 1, attempt: 2 });
		// Its next settlement is compacted in turn.
		await confirm('c:retry', again.leaseToken, 'succeeded', { externalRef: 'pay_retry', response: { id: 'pay_retry' } });
		await age('c:retry', 40);
		await compact(30);
		expect(await row('c:retry')).toMatchObject({ compacted_attempt: 2, response: null, request: null, external_ref: 'pay_retry' });
	});

	it('is batched and bounded: max batches stops it, and a later run finishes', async () => {
		await db.pool.query(
			`INSERT INTO ${db.schemaSql}.operations (operation_key, status, fingerprint, fingerprint_alg, attempt, idempotency_key, external_ref, response, settled_at)
			 SELECT 'c:bulk:' || g, 'succeeded', 'f', 'sha256-jcs-rfc8785', 1, 'ik' || g, 'ref' || g, '{"a":1}', now() - interval '60 days'
			   FROM generate_series(1, 250) g`,
		);
		const first = await runRetention(db.pool, db.ledgerSchema, checkRetentionOptions({ mode: 'compact', olderThanDays: 30, batchSize: 50, maxBatches: 2 }));
		expect(first).toMatchObject({ batches: 2, operations: 100, stoppedBecause: 'max_batches' });
		const rest = await runRetention(db.pool, db.ledgerSchema, checkRetentionOptions({ mode: 'compact', olderThanDays: 30, batchSize: 50, maxBatches: 100 }));
		expect(rest.stoppedBecause).toBe('done');
		expect(rest.operations).toBeGreaterThanOrEqual(150);
		const left = await db.pool.query(`SELECT count(*) FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'c:bulk:%' AND compacted_at IS NULL`);
		expect(Number(left.rows[0].count)).toBe(0);
	});

	it('a failing batch is rolled back and reports what committed before it', async () => {
		await db.pool.query(
			`INSERT INTO ${db.schemaSql}.operations (operation_key, status, fingerprint, fingerprint_alg, attempt, idempotency_key, response, settled_at)
			 SELECT 'c:fail:' || g, 'succeeded', 'f', 'a', 1, 'ik', '{}', now() - interval '60 days' + g * interval '1 second' FROM generate_series(1, 3) g`,
		);
		// The second operation cannot be changed: its batch must fail as a whole.
		await db.pool.query(`CREATE FUNCTION ${db.schemaSql}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$`);
		await db.pool.query(
			`CREATE TRIGGER refuse BEFORE UPDATE ON ${db.schemaSql}.operations FOR EACH ROW WHEN (OLD.operation_key = 'c:fail:2') EXECUTE FUNCTION ${db.schemaSql}.refuse()`,
		);
		try {
			const err = await runRetention(db.pool, db.ledgerSchema, checkRetentionOptions({ mode: 'compact', olderThanDays: 50, batchSize: 1 }), ctx).then(
				() => null,
				(e: RetentionError) => e,
			);
			expect(err).toBeInstanceOf(RetentionError);
			expect(err!.message).toMatch(/batch 2 failed and was rolled back: refused for the test.*1 earlier batch\(es\) committed \(1 operation/);
			expect(err!.report).toMatchObject({ batches: 1, operations: 1 });
			expect((await row('c:fail:1')).compacted_at).not.toBeNull();
			expect(await row('c:fail:2')).toMatchObject({ compacted_at: null, response: {} });
		} finally {
			await db.pool.query(`DROP TRIGGER refuse ON ${db.schemaSql}.operations`);
		}
		await compact(50);
	});

	it('safe beside concurrent Reserves: replays keep answering Done Before while compaction runs', async () => {
		const N = 400;
		await db.pool.query(
			`INSERT INTO ${db.schemaSql}.operations (operation_key, status, fingerprint, fingerprint_alg, attempt, idempotency_key, external_ref, request, response, settled_at)
			 SELECT 'c:conc:' || g, 'succeeded', $1, 'sha256-jcs-rfc8785', 1, 'ik' || g, 'ref' || g, '{}', '{"id":1}', now() - interval '60 days'
			   FROM generate_series(1, $2::int) g`,
			[prepareReserveItem(0, { operationKey: 'x', request: { same: true }, leaseSeconds: 60 }).fingerprint, N],
		);
		// Retryable failures too: Reserve locks and re-reserves those while compaction picks them.
		await db.pool.query(
			`UPDATE ${db.schemaSql}.operations SET status = 'failed', retryable = true, external_ref = NULL WHERE operation_key LIKE 'c:conc:%' AND right(operation_key, 1) = '7'`,
		);
		let stop = false;
		const outcomes: string[] = [];
		const reservers = Array.from({ length: 3 }, async (_, w) => {
			let n = w;
			while (!stop) {
				const batch = Array.from({ length: 20 }, (_, j) => prepareReserveItem(j, { operationKey: `c:conc:${((n * 20 + j) % N) + 1}`, request: { same: true }, leaseSeconds: 60 }));
				n += 3;
				const res = await reserveOperations(db.pool, db.ledgerSchema, batch, ctx);
				for (const r of res) outcomes.push(`${batch[r.index].operationKey}=${r.outcome}`);
			}
		});
		const report = await runRetention(db.pool, db.ledgerSchema, checkRetentionOptions({ mode: 'compact', olderThanDays: 30, batchSize: 25, maxBatches: 1000 }));
		stop = true;
		await Promise.all(reservers);
		expect(report.stoppedBecause).toBe('done');
		expect(report.operations).toBeGreaterThanOrEqual(N - 40);
		expect(outcomes.length).toBeGreaterThanOrEqual(60);
		for (const o of outcomes) {
			const [key, outcome] = o.split('=');
			const retryable = key.endsWith('7');
			if (retryable) expect(['proceed', 'in_progress']).toContain(outcome);
			else expect(outcome).toBe('already_succeeded');
		}
		// Every succeeded row is compacted and still answers from the ledger.
		const { rows } = await db.pool.query(
			`SELECT count(*) FILTER (WHERE compacted_at IS NULL) AS left, count(*) FILTER (WHERE external_ref IS NULL) AS noref
			   FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'c:conc:%' AND status = 'succeeded'`,
		);
		expect(Number(rows[0].left)).toBe(0);
		expect(Number(rows[0].noref)).toBe(0);
	});

	it('hard delete needs the explicit acknowledgement, keeps unknown rows, and then forgets the key', async () => {
		expect(() => checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 30 })).toThrow(/acknowledgement/);
		await expect(
			db.pool.query(`SELECT * FROM ${db.schemaSql}.ops_hard_delete_batch(30, 10, 'yes', '{}'::jsonb)`),
		).rejects.toThrow(/acknowledgement/);
		const r = await reserve('h:gone', { amount: 1 });
		await confirm('h:gone', r.leaseToken, 'succeeded', { externalRef: 'pay_h' });
		await makeUnknown('h:unknown');
		await age('h:', 40);
		await db.pool.query(`UPDATE ${db.schemaSql}.operations SET created_at = created_at - interval '40 days' WHERE operation_key = 'h:unknown'`);
		const report = await runRetention(db.pool, db.ledgerSchema, checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 30, acknowledge: true, batchSize: 1000 }));
		expect(report.operations).toBeGreaterThanOrEqual(1);
		expect(await row('h:gone')).toBeUndefined();
		expect(await eventCount('h:gone')).toBe(0);
		expect((await row('h:unknown')).status).toBe('unknown');
		// The stated consequence: the key is new again.
		expect(await reserve('h:gone', { amount: 1 })).toMatchObject({ outcome: 'proceed', attempt: 1 });
	});

	it('the event log stays append-only outside retention', async () => {
		await expect(db.pool.query(`DELETE FROM ${db.schemaSql}.operation_events WHERE operation_key = 'g:1'`)).rejects.toThrow(/append-only/);
		await expect(db.pool.query(`UPDATE ${db.schemaSql}.operation_events SET event = 'x' WHERE operation_key = 'g:1'`)).rejects.toThrow(/append-only/);
	});
});
