/**
 * assessReplication's rules (src/db/replication.ts) and the credential test's answer to them
 * (failoverRefusal), on hand-made states; the real servers are in
 * test/integration/hardening/replication-check.test.ts. Also the sync-rep watch's notice rules.
 */
import { EventEmitter } from 'node:events';
import { assessReplication, monitorGrant, type ReplicationState } from '../../../src/db/replication';
import { watchSyncRep } from '../../../src/db/syncRep';
import { failoverRefusal } from '../../../nodes/shared/connection';

const base: ReplicationState = {
	inRecovery: false,
	defaultTransactionReadOnly: false,
	transactionReadOnly: false,
	synchronousCommit: 'on',
	synchronousStandbyNames: '',
	currentUser: 'n8n_ledger',
	detailsVisible: true,
	serverVersionNum: 150019,
	inherits: true,
	standbys: [],
};
const sb = (name: string, syncState: string | null) => ({ name, state: 'streaming', syncState, replayLagMs: 0 });

describe('assessReplication', () => {
	it.each([
		['single server', {}, 'single_server', true, null],
		['standby', { inRecovery: true }, 'standby', false, null],
		['read-only role', { defaultTransactionReadOnly: true }, 'read_only', false, null],
		['asynchronous standby', { standbys: [sb('s1', 'async')] }, 'asynchronous', true, false],
		['asynchronous, details hidden: still known (nothing waits)', { detailsVisible: false, standbys: [sb('s1', null)] }, 'asynchronous', true, false],
		['synchronous', { synchronousStandbyNames: 's1', standbys: [sb('s1', 'sync')] }, 'synchronous', true, true],
		['quorum', { synchronousStandbyNames: 'ANY 1 (s1, s2)', standbys: [sb('s1', 'quorum'), sb('s2', 'quorum')] }, 'synchronous', true, true],
		['remote_apply', { synchronousStandbyNames: '*', synchronousCommit: 'remote_apply', standbys: [sb('s1', 'sync')] }, 'synchronous', true, true],
		['names set, role commits locally', { synchronousStandbyNames: 's1', synchronousCommit: 'local', standbys: [sb('s1', 'sync')] }, 'asynchronous', true, false],
		['names set, synchronous_commit off', { synchronousStandbyNames: '*', synchronousCommit: 'off', standbys: [] }, 'asynchronous', true, false],
		['names set, no standby connected', { synchronousStandbyNames: '*' }, 'writes_blocked', false, null],
		['names set, only a non-matching standby', { synchronousStandbyNames: 's2', standbys: [sb('s1', 'async')] }, 'writes_blocked', false, null],
		['names set, details hidden', { synchronousStandbyNames: 's1', detailsVisible: false, standbys: [sb('s1', null)] }, 'unknown', true, null],
		['names set, none connected, details hidden: still blocked (no connection at all)', { synchronousStandbyNames: 's1', detailsVisible: false }, 'writes_blocked', false, null],
	] as const)('%s', (_, patch, verdict, writable, failoverSafe) => {
		const r = assessReplication({ ...base, ...(patch as Partial<ReplicationState>) });
		expect(r.verdict).toBe(verdict);
		expect(r.writable).toBe(writable);
		expect(r.failoverSafe).toBe(failoverSafe);
		expect(r.message.length).toBeGreaterThan(40);
		if (verdict !== 'single_server') expect(r.advice.length).toBeGreaterThan(0);
	});

	it('lists the asynchronous standbys next to the synchronous one as never to promote', () => {
		const r = assessReplication({ ...base, synchronousStandbyNames: 'FIRST 1 (s1)', standbys: [sb('s1', 'sync'), sb('s2', 'async'), sb('s3', 'potential')] });
		expect(r.verdict).toBe('synchronous');
		expect(r.standbys).toMatchObject({ count: 3, synchronous: 1 });
		expect(r.advice.join(' ')).toMatch(/Fail over only to a synchronous standby \(s1\)/);
		expect(r.advice.join(' ')).toMatch(/Never promote an asynchronous one \(s2 async, s3 potential\)/);
	});

	it('says what a role without pg_read_all_stats cannot see, and the grant that fits the role', () => {
		const r = assessReplication({ ...base, detailsVisible: false, inherits: false, synchronousStandbyNames: 's1', standbys: [sb('s1', null)] });
		expect(r.standbys.list).toBeNull();
		expect(r.unknown).toHaveLength(1);
		expect(r.unknown[0]).toMatch(/pg_read_all_stats/);
		expect(monitorGrant({ currentUser: 'x', inherits: true, serverVersionNum: 150000 })).toBe('GRANT pg_monitor TO x');
		expect(monitorGrant({ currentUser: 'x', inherits: false, serverVersionNum: 160002 })).toBe('GRANT pg_monitor TO x WITH INHERIT TRUE');
		expect(monitorGrant({ currentUser: 'x', inherits: false, serverVersionNum: 150019 })).toMatch(/^GRANT pg_monitor TO x; ALTER ROLE x INHERIT/);
		expect(monitorGrant({ currentUser: 'N8n"Role', inherits: true, serverVersionNum: 150000 })).toBe('GRANT pg_monitor TO "N8n""Role"');
	});
});

describe('failoverRefusal (the credential test)', () => {
	const verdictOf = (patch: Partial<ReplicationState>) => assessReplication({ ...base, ...patch });
	it('passes a single server, synchronous standbys and what this role cannot tell', () => {
		expect(failoverRefusal(verdictOf({}), false)).toBeUndefined();
		expect(failoverRefusal(verdictOf({ synchronousStandbyNames: 's1', standbys: [sb('s1', 'sync')] }), false)).toBeUndefined();
		expect(failoverRefusal(verdictOf({ synchronousStandbyNames: 's1', detailsVisible: false, standbys: [sb('s1', null)] }), false)).toBeUndefined();
	});
	it('fails asynchronous standbys unless the operator chose to report only', () => {
		const r = verdictOf({ standbys: [sb('s1', 'async')] });
		expect(failoverRefusal(r, false)).toMatch(/^Connected, and the nodes work, but the promise does not survive a failover: .*What to change: .*Report in Health Only/);
		expect(failoverRefusal(r, true)).toBeUndefined();
	});
	it('always fails where the nodes cannot write', () => {
		for (const patch of [{ inRecovery: true }, { defaultTransactionReadOnly: true }, { synchronousStandbyNames: '*' }]) {
			expect(failoverRefusal(verdictOf(patch), true)).toMatch(/^Connected, but the nodes cannot write here: /);
		}
	});
});

describe('watchSyncRep notices', () => {
	const client = () => Object.assign(new EventEmitter(), { processID: 1, secretKey: 2, host: '127.0.0.1', port: 1 });
	it('the English WARNING marks the commit unconfirmed, whoever cancelled', () => {
		const c = client();
		const w = watchSyncRep(c, 60_000, 100);
		c.emit('notice', { severity: 'WARNING', code: '01000', message: 'canceling wait for synchronous replication due to user request' });
		expect(w.unconfirmed()).toBe(true);
		w.stop();
		expect(c.listenerCount('notice')).toBe(0);
	});
	it('another notice, or a translated WARNING without our cancel, does not', async () => {
		const c = client();
		const w = watchSyncRep(c, 60_000, 100);
		c.emit('notice', { severity: 'NOTICE', code: '00000', message: 'relation already exists, skipping' });
		w.arm();
		c.emit('notice', { severity: 'WARNUNG', code: '01000', message: 'Warten auf synchrone Replikation wird abgebrochen' });
		w.disarm();
		expect(w.warnedDuringCommit).toBe(true);
		expect(w.cancelSent).toBe(false);
		expect(w.unconfirmed()).toBe(false);
		w.stop();
	});
	it('after its own cancel, any WARNING on the COMMIT (any language) marks it unconfirmed; disarm stops the timer', async () => {
		const c = client();
		// Jest's clock (timers and Date): the 20 ms cancel timer fires when the clock is moved past it.
		jest.useFakeTimers();
		const w = watchSyncRep(c, 20, 100);
		w.arm();
		jest.advanceTimersByTime(80);
		c.emit('notice', { severity: 'WARNUNG', code: '01000', message: 'Warten auf synchrone Replikation wird abgebrochen' });
		w.disarm();
		expect(w.cancelSent).toBe(true);
		expect(w.cancelAfterMs).toBeGreaterThanOrEqual(19);
		expect(w.unconfirmed()).toBe(true);
		w.stop();
		const quiet = watchSyncRep(c, 20, 100);
		quiet.arm();
		quiet.disarm();
		jest.advanceTimersByTime(60);
		expect(quiet.cancelSent).toBe(false);
		quiet.stop();
		jest.useRealTimers();
	});
});

// A test that moved Jest's clock never leaves it moved for the next.
afterEach(() => jest.useRealTimers());
