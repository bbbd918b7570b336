// The lease-expiry transition (reserved -> unknown) is one function, ledger_expire_lease. Whoever
// sees the expiry first (a new Reserve of the key, a reconcile claim's sweep, or the holder's own
// late "unknown" report) must leave the same row and the same lease_expired event.
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { claimUnknown } from '../../../src/ledger/reconcile/claim';
import { fixLedgerClock, setLedgerClock, testDatabase } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ max: 2 });
});
afterAll(async () => {
	await db.drop();
});

const T0 = new Date('2031-03-04T05:06:07.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const LEASE = 30;
const SETTLE = 90;
const PATHS = ['reserve', 'claim', 'confirm'] as const;
const key = (path: string) => `expiry:${path}`;

async function rowOf(k: string) {
	const { rows } = await db.pool.query(
		`SELECT status, reason, attempt, lease_expires_at, unknown_since, settle_until, next_check_at, updated_at
		   FROM ${db.schemaSql}.operations WHERE operation_key = $1`,
		[k],
	);
	return rows[0];
}
async function expiryEvents(k: string) {
	const { rows } = await db.pool.query(
		`SELECT e.event, e.from_status, e.to_status, e.attempt, e.detail,
		        e.lease_token_hash = o.lease_token_hash AS holders_token
		   FROM ${db.schemaSql}.operation_events e JOIN ${db.schemaSql}.operations o USING (operation_key)
		  WHERE e.operation_key = $1 AND e.event = 'lease_expired' ORDER BY e.event_id`,
		[k],
	);
	return rows;
}

describe('lease expiry: one transition whoever sees it', () => {
	it('Reserve, a reconcile claim and a late "unknown" from the holder leave identical unknown_since, settle_until and lease_expired event', async () => {
		try {
			await fixLedgerClock(db.pool, db.schema, T0);
			const tokens: Record<string, string> = {};
			for (const path of PATHS) {
				const [r] = await reserveOperations(db.pool, db.ledgerSchema, [
					prepareReserveItem(0, { operationKey: key(path), request: { path }, leaseSeconds: LEASE, settleSeconds: SETTLE, target: `t-${path}` }),
				]);
				expect(r.outcome).toBe('proceed');
				tokens[path] = r.leaseToken!;
			}
			// 70 s after the lease ended: noticing late must not move the moment the ledger stopped knowing.
			await fixLedgerClock(db.pool, db.schema, at(100));

			const [again] = await reserveOperations(db.pool, db.ledgerSchema, [
				prepareReserveItem(0, { operationKey: key('reserve'), request: { path: 'reserve' }, leaseSeconds: LEASE, settleSeconds: SETTLE, target: 't-reserve' }),
			]);
			expect(again.outcome).toBe('needs_reconcile');
			// The sweep turns the lease unknown; its settle window (until lease end + 90 s) is still open.
			expect(await claimUnknown(db.pool, db.ledgerSchema, { limit: 10, settleSeconds: 0, claimSeconds: 30, target: 't-claim' })).toEqual([]);
			const [late] = await confirmOperations(db.pool, db.ledgerSchema, [
				prepareConfirmItem(0, { operationKey: key('confirm'), leaseToken: tokens.confirm, outcome: 'unknown', reason: 'HTTP 504' }),
			]);

			const expected = {
				status: 'unknown',
				reason: 'lease expired without a confirmation',
				attempt: 1,
				lease_expires_at: at(LEASE),
				unknown_since: at(LEASE),
				settle_until: at(LEASE + SETTLE),
				next_check_at: at(100),
				updated_at: at(100),
			};
			const event = {
				event: 'lease_expired',
				from_status: 'reserved',
				to_status: 'unknown',
				attempt: 1,
				detail: { settleUntil: expect.stringMatching(/^2031-03-04T05:08:07/) },
				holders_token: true,
			};
			for (const path of PATHS) {
				expect({ path, row: await rowOf(key(path)) }).toEqual({ path, row: expected });
				expect({ path, events: await expiryEvents(key(path)) }).toEqual({ path, events: [event] });
			}
			expect(late).toMatchObject({ result: 'recorded', status: 'unknown', late: true });
			const details = await Promise.all(PATHS.map(async (p) => (await expiryEvents(key(p)))[0].detail));
			expect(new Set(details.map((d) => JSON.stringify(d))).size).toBe(1);

			// The same window for all three: none is due a second before it ends, all are due after it.
			await fixLedgerClock(db.pool, db.schema, at(LEASE + SETTLE - 1));
			expect(await claimUnknown(db.pool, db.ledgerSchema, { limit: 10, settleSeconds: 0, claimSeconds: 30, target: null })).toEqual([]);
			await fixLedgerClock(db.pool, db.schema, at(LEASE + SETTLE));
			const claimed = await claimUnknown(db.pool, db.ledgerSchema, { limit: 10, settleSeconds: 0, claimSeconds: 30, target: null });
			expect(claimed.map((c) => [c.operationKey, c.unknownSince]).sort()).toEqual(PATHS.map((p) => [key(p), at(LEASE).toISOString()]).sort());
		} finally {
			await setLedgerClock(db.pool, db.schema, 0);
		}
	});

	it('the holder\'s late "unknown" after a sweep is a harmless repeat; before a sweep it is recorded as a late event after lease_expired', async () => {
		try {
			await fixLedgerClock(db.pool, db.schema, T0);
			const [a] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: 'expiry:order', request: {}, leaseSeconds: LEASE, target: 't-order' })]);
			await fixLedgerClock(db.pool, db.schema, at(LEASE));
			const report = () => confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: 'expiry:order', leaseToken: a.leaseToken!, outcome: 'unknown', reason: 'timeout' })]);
			expect((await report())[0]).toMatchObject({ result: 'recorded', late: true });
			expect((await report())[0]).toMatchObject({ result: 'repeated' });
			const { rows } = await db.pool.query(
				`SELECT event, from_status, to_status, detail->>'late' AS late FROM ${db.schemaSql}.operation_events WHERE operation_key = 'expiry:order' ORDER BY event_id`,
			);
			expect(rows).toEqual([
				{ event: 'reserved', from_status: null, to_status: 'reserved', late: null },
				{ event: 'lease_expired', from_status: 'reserved', to_status: 'unknown', late: null },
				{ event: 'confirmed_unknown', from_status: 'unknown', to_status: 'unknown', late: 'true' },
			]);
		} finally {
			await setLedgerClock(db.pool, db.schema, 0);
		}
	});
});
