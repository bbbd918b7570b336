import { createHash } from 'node:crypto';
import type { INodeExecutionData } from 'n8n-workflow';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { claimUnknown, type ClaimOptions } from '../../../src/ledger/reconcile/claim';
import { prepareResolveItem, resolveUnknown } from '../../../src/ledger/reconcile/resolve';
import { ReconcileUnknown } from '../../../nodes/ReconcileUnknown/ReconcileUnknown.node';
import { closeAllPools } from '../../../src/db/pool';
import { DATABASE_URL, setLedgerClock, testDatabase } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase();
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});
const resolveOpts = { maxChecks: 3, backoffBaseSeconds: 60, backoffMaxSeconds: 600 };

/**
 * Reserves `key` (target t) and confirms it unknown; returns the reservation. Unless `settled` is
 * false, the operation's settle window is then moved into the past (as if it had passed).
 */
async function makeUnknown(key: string, target = 'pay', settled = true, settleSeconds = 120) {
	const [r] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: key, request: { key }, leaseSeconds: 60, target, settleSeconds })]);
	await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: key, leaseToken: r.leaseToken, outcome: 'unknown', reason: 'HTTP 504' })]);
	if (settled) await db.pool.query(`UPDATE ${db.schemaSql}.operations SET settle_until = settle_until - interval '1 day' WHERE operation_key = $1`, [key]);
	return r;
}
const claim = (o: Partial<ClaimOptions> = {}) => claimUnknown(db.pool, db.ledgerSchema, { limit: 100, settleSeconds: 0, claimSeconds: 30, target: null, ...o });
async function row(key: string) {
	return (await db.pool.query(`SELECT * FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [key])).rows[0];
}
async function events(key: string) {
	return (await db.pool.query(`SELECT event FROM ${db.schemaSql}.operation_events WHERE operation_key = $1 ORDER BY event_id`, [key])).rows.map((r) => r.event);
}

describe('Reconcile Unknown', () => {
	it('waits out the extra settle delay, then claims oldest first with what a lookup needs', async () => {
		const r = await makeUnknown('r:settle:1', 'settle');
		await makeUnknown('r:settle:2', 'settle');
		expect(await claim({ target: 'settle', settleSeconds: 60 })).toEqual([]);
		// Let 61 seconds pass for these rows (moving their clock back instead of sleeping).
		await db.pool.query(
			`UPDATE ${db.schemaSql}.operations SET unknown_since = unknown_since - interval '61 seconds' WHERE target = 'settle'`,
		);
		const claimed = await claim({ target: 'settle', settleSeconds: 60 });
		expect(claimed.map((c) => c.operationKey)).toEqual(['r:settle:1', 'r:settle:2']);
		expect(claimed[0]).toMatchObject({ target: 'settle', idempotencyKey: r.idempotencyKey, request: { key: 'r:settle:1' }, attempt: 1, checks: 0 });
	});

	it('two reconcilers running at once never claim the same operation', async () => {
		for (let n = 0; n < 40; n++) await makeUnknown(`r:race:${n}`, 'race');
		const batches = await Promise.all(Array.from({ length: 4 }, () => claim({ target: 'race', limit: 15 })));
		const keys = batches.flat().map((c) => c.operationKey);
		expect(keys.length).toBe(40);
		expect(new Set(keys).size).toBe(40);
		// While the claims are live nobody else gets them.
		expect(await claim({ target: 'race' })).toEqual([]);
	});

	it('an expired lease becomes unknown with an event, and is claimed only after its own settle window (lease end + window)', async () => {
		try {
			await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: 'r:lease', request: {}, leaseSeconds: 1, target: 'lease', settleSeconds: 60 })]);
			await setLedgerClock(db.pool, db.schema, 2);
			expect(await claim({ target: 'lease' })).toEqual([]);
			const unknown = await row('r:lease');
			expect(unknown.status).toBe('unknown');
			expect(unknown.settle_until.getTime() - unknown.lease_expires_at.getTime()).toBe(60_000);
			await setLedgerClock(db.pool, db.schema, 60);
			expect(await claim({ target: 'lease' })).toEqual([]);
			await setLedgerClock(db.pool, db.schema, 62);
			const got = await claim({ target: 'lease' });
			expect(got.map((c) => c.operationKey)).toEqual(['r:lease']);
			expect(await events('r:lease')).toEqual(['reserved', 'lease_expired']);
		} finally {
			await setLedgerClock(db.pool, db.schema, 0);
		}
	});

	it('the settle window belongs to the operation: stored at Reserve, started when it goes unknown, not claimable before it ends', async () => {
		try {
			await makeUnknown('r:window', 'window', false, 300);
			const stored = await row('r:window');
			expect(stored.settle_seconds).toBe(300);
			expect(stored.settle_until.getTime() - stored.unknown_since.getTime()).toBe(300_000);
			// A reconciler with no extra delay still cannot claim it early.
			expect(await claim({ target: 'window', settleSeconds: 0 })).toEqual([]);
			await setLedgerClock(db.pool, db.schema, 299);
			expect(await claim({ target: 'window' })).toEqual([]);
			await setLedgerClock(db.pool, db.schema, 301);
			const [c] = await claim({ target: 'window' });
			expect(c.operationKey).toBe('r:window');
			const [res] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: 'r:window', claimToken: c.claimToken, resolution: 'not_happened' })], resolveOpts);
			expect(res).toMatchObject({ result: 'failed', status: 'failed' });
		} finally {
			await setLedgerClock(db.pool, db.schema, 0);
		}
	});

	it('Resolve refuses "did not happen" from a claim made before the settle window ended (refused_early); "happened" is still accepted', async () => {
		try {
			await makeUnknown('r:early', 'early');
			await makeUnknown('r:early:yes', 'early');
			const claimed = await claim({ target: 'early' });
			expect(claimed).toHaveLength(2);
			// The operations' windows turn out to end later than the claim (e.g. a window that was
			// extended): the claim was made before settle_until.
			await db.pool.query(`UPDATE ${db.schemaSql}.operations SET settle_until = ${db.schemaSql}.ledger_now() + interval '100 seconds' WHERE target = 'early'`);
			const byKey = new Map(claimed.map((c) => [c.operationKey, c.claimToken]));
			const res = await resolveUnknown(
				db.pool,
				db.ledgerSchema,
				[
					prepareResolveItem(0, { operationKey: 'r:early', claimToken: byKey.get('r:early'), resolution: 'not_happened' }),
					prepareResolveItem(1, { operationKey: 'r:early:yes', claimToken: byKey.get('r:early:yes'), resolution: 'happened', externalRef: 'pay_E' }),
				],
				resolveOpts,
			);
			expect(res[0]).toMatchObject({ result: 'refused_early', status: 'unknown' });
			expect(res[1]).toMatchObject({ result: 'succeeded', status: 'succeeded' });
			const early = await row('r:early');
			expect(early).toMatchObject({ status: 'unknown', claim_token_hash: null, claimed_at: null, reconcile_checks: 0 });
			expect(early.next_check_at.getTime()).toBe(early.settle_until.getTime());
			expect(await events('r:early')).toEqual(['reserved', 'confirmed_unknown', 'reconcile_refused_early']);
			// A claim made after the window may say "did not happen".
			expect(await claim({ target: 'early' })).toEqual([]);
			await setLedgerClock(db.pool, db.schema, 101);
			const [again] = await claim({ target: 'early' });
			const [ok] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: 'r:early', claimToken: again.claimToken, resolution: 'not_happened' })], resolveOpts);
			expect(ok).toMatchObject({ result: 'failed', status: 'failed' });
		} finally {
			await setLedgerClock(db.pool, db.schema, 0);
		}
	});

	it('stores no claim token: only its SHA-256', async () => {
		await makeUnknown('r:hash', 'hash');
		const [c] = await claim({ target: 'hash' });
		const r = await row('r:hash');
		expect(r.claim_token).toBeUndefined();
		expect(r.claim_token_hash).toEqual(createHash('sha256').update(Buffer.from(c.claimToken.replace(/-/g, ''), 'hex')).digest());
	});

	it('happened records success with the reference; a replay then answers from the ledger', async () => {
		await makeUnknown('r:happened', 'happened');
		const [c] = await claim({ target: 'happened' });
		const [res] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: c.operationKey, claimToken: c.claimToken, resolution: 'happened', externalRef: 'pay_77', response: { id: 'pay_77' } })], resolveOpts);
		expect(res).toMatchObject({ result: 'succeeded', status: 'succeeded', externalRef: 'pay_77' });
		const [again] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: 'r:happened', request: { key: 'r:happened' }, leaseSeconds: 60 })]);
		expect(again).toMatchObject({ outcome: 'already_succeeded', externalRef: 'pay_77' });
		expect(await events('r:happened')).toEqual(['reserved', 'confirmed_unknown', 'reconciled_succeeded']);
	});

	it('happened without a reference is refused: evidence is required', () => {
		expect(() => prepareResolveItem(0, { operationKey: 'k', claimToken: '11111111-2222-4333-8444-555555555555', resolution: 'happened' })).toThrow(/needs the target's reference/);
	});

	it('did not happen becomes a retryable failure: the next Reserve proceeds with attempt 2', async () => {
		const first = await makeUnknown('r:nothappened', 'nh');
		const [c] = await claim({ target: 'nh' });
		const [res] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: c.operationKey, claimToken: c.claimToken, resolution: 'not_happened' })], resolveOpts);
		expect(res).toMatchObject({ result: 'failed', status: 'failed' });
		const [again] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: 'r:nothappened', request: { key: 'r:nothappened' }, leaseSeconds: 60 })]);
		expect(again).toMatchObject({ outcome: 'proceed', attempt: 2 });
		expect(again.idempotencyKey).not.toBe(first.idempotencyKey);
	});

	it('still unknown backs off exponentially (capped), then goes to review after max checks; review rows stay and Reserve reports them', async () => {
		await makeUnknown('r:review', 'review');
		const opts = { maxChecks: 4, backoffBaseSeconds: 60, backoffMaxSeconds: 150 };
		const results: string[] = [];
		const waits: Array<number | null> = [];
		for (let n = 0; n < 4; n++) {
			const [c] = await claim({ target: 'review' });
			expect(c.checks).toBe(n);
			const [res] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: c.operationKey, claimToken: c.claimToken, resolution: 'still_unknown', reason: 'lookup 503' })], opts);
			results.push(res.result);
			const { rows } = await db.pool.query(
				`SELECT extract(epoch FROM next_check_at - updated_at)::float AS wait FROM ${db.schemaSql}.operations WHERE operation_key = 'r:review'`,
			);
			waits.push(rows[0].wait);
			if (res.result === 'unknown') {
				expect(await claim({ target: 'review' })).toEqual([]); // backing off
				await db.pool.query(`UPDATE ${db.schemaSql}.operations SET next_check_at = now() WHERE operation_key = 'r:review'`);
			}
		}
		expect(results).toEqual(['unknown', 'unknown', 'unknown', 'review']);
		expect(waits).toEqual([60, 120, 150, null]);
		expect(await row('r:review')).toMatchObject({ status: 'review', reconcile_checks: 4, reason: 'lookup 503' });
		expect(await claim({ target: 'review' })).toEqual([]);
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: 'r:review', request: { key: 'r:review' }, leaseSeconds: 60 })]);
		expect(r).toMatchObject({ outcome: 'needs_reconcile', status: 'review' });
		expect(await events('r:review')).toEqual([
			'reserved',
			'confirmed_unknown',
			'reconcile_still_unknown',
			'reconcile_still_unknown',
			'reconcile_still_unknown',
			'review_required',
		]);
	});

	it('a lapsed claim or a late Confirm meanwhile makes the resolution a no-op (claim lost)', async () => {
		const r = await makeUnknown('r:lost', 'lost');
		const [c] = await claim({ target: 'lost', claimSeconds: 1 });
		// The original holder's late Confirm is evidence and lands first.
		await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 'r:lost', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'pay_late' })]);
		const [res] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: c.operationKey, claimToken: c.claimToken, resolution: 'not_happened' })], resolveOpts);
		expect(res).toMatchObject({ result: 'claim_lost', status: 'succeeded', externalRef: 'pay_late' });

		await makeUnknown('r:lapsed', 'lapsed');
		const [c1] = await claim({ target: 'lapsed', claimSeconds: 1 });
		// The 1 s claim lapses: the ledger's clock moves 2 s on.
		await setLedgerClock(db.pool, db.schema, 2);
		const [c2] = await claim({ target: 'lapsed' });
		expect(c2.operationKey).toBe('r:lapsed');
		const [old] = await resolveUnknown(db.pool, db.ledgerSchema, [prepareResolveItem(0, { operationKey: 'r:lapsed', claimToken: c1.claimToken, resolution: 'not_happened' })], resolveOpts);
		await setLedgerClock(db.pool, db.schema, 0);
		expect(old.result).toBe('claim_lost');
		expect((await row('r:lapsed')).status).toBe('unknown');
	});
});

describe('Reconcile Unknown node', () => {
	const creds = () => testCredentials(DATABASE_URL, db.schema);

	it('claims, then resolves HTTP lookups found through paired items', async () => {
		await makeUnknown('n:found', 'node');
		await makeUnknown('n:missing', 'node');
		await makeUnknown('n:flaky', 'node');
		const claimFns = fakeExecute({
			items: [{ json: {} }],
			params: { operation: 'claim', batchSize: 10, settleSeconds: 0, claimSeconds: 60, target: 'node' },
			credentials: creds(),
		});
		// Unrecorded (0), To Check (1), then Resolve's outputs, which Claim leaves empty.
		const [unrecorded, claimed, ...resolveOutputs] = await new ReconcileUnknown().execute.call(claimFns);
		expect(unrecorded).toEqual([]);
		expect(resolveOutputs.flat()).toEqual([]);
		expect(claimed.map((i) => i.json.operationKey)).toEqual(['n:found', 'n:missing', 'n:flaky']);
		expect(claimed.every((i) => (i.pairedItem as { item: number }).item === 0)).toBe(true);

		const lookups: INodeExecutionData[] = [
			{ json: { id: 'pay_found', status: 'succeeded' }, pairedItem: { item: 0 } },
			{ json: { error: { message: '404 - "not found"', httpCode: '404' } }, pairedItem: { item: 1 } },
			{ json: { error: { message: '503 - "unavailable"', httpCode: '503' } }, pairedItem: { item: 2 } },
		];
		const resolveFns = fakeExecute({
			items: lookups,
			params: {
				operation: 'resolve',
				lookupSource: 'httpLookup',
				externalReference: (i: number) => (lookups[i].json as { id?: string }).id ?? '',
				maxChecks: 5,
				backoffBaseSeconds: 60,
				backoffMaxSeconds: 3600,
				lineage: 'auto',
				claimNode: '',
			},
			credentials: creds(),
			parents: [
				{ name: 'Look Up Payment', type: 'n8n-nodes-base.httpRequest' },
				{ name: 'Claim Unknown', type: 'n8n-nodes-operation-ledger.reconcileUnknown' },
			],
			pairedFrom: { 'Claim Unknown': (i) => claimed[(lookups[i].pairedItem as { item: number }).item] },
		});
		const out = await new ReconcileUnknown().execute.call(resolveFns);
		// Unrecorded, To Check (Claim's, empty here), Succeeded, Failed, Unknown, To Review, Claim Lost.
		expect(out).toHaveLength(7);
		expect(out[0]).toEqual([]);
		expect(out[1]).toEqual([]);
		expect(out[2].map((i) => [i.pairedItem, (i.json.reconcile as { externalRef: string }).externalRef])).toEqual([[{ item: 0 }, 'pay_found']]);
		expect(out[3].map((i) => i.pairedItem)).toEqual([{ item: 1 }]);
		expect(out[4].map((i) => i.pairedItem)).toEqual([{ item: 2 }]);
		expect((await row('n:found')).status).toBe('succeeded');
		expect((await row('n:missing'))).toMatchObject({ status: 'failed', retryable: true });
		expect((await row('n:flaky'))).toMatchObject({ status: 'unknown', reconcile_checks: 1 });
	});

	it('rejects a bad batch size as an item-level error', async () => {
		const fns = fakeExecute({
			items: [{ json: {} }],
			params: { operation: 'claim', batchSize: 0, settleSeconds: 0, claimSeconds: 60, target: '' },
			credentials: creds(),
		});
		await expect(new ReconcileUnknown().execute.call(fns)).rejects.toThrow(/batch size must be a whole number from 1 to 1000/);
	});
});
