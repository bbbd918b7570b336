/**
 * Issue 29: the package tells an operator when the promise does not survive a failover, and a
 * write that waits for a synchronous standby that is gone ends within the package's bounds.
 *
 * A private primary and a streaming standby on loopback (PostgreSQL's own binaries under
 * /usr/lib/postgresql/<v>/bin: pg_basebackup -R), walked through the states an operator meets:
 * a single server, an asynchronous standby, a synchronous one, a standby seen directly, a
 * read-only role, a role whose commits do not wait, and a synchronous standby that is gone. For
 * each: the credential test (superuser and the least-privileged nodes' role) and Admin Health's
 * `replication` report (superuser and the operator role, before and after GRANT pg_monitor).
 * Then what PostgreSQL 15 does with statement_timeout during a sync-rep wait (nothing), and that
 * Reserve, Confirm and Enqueue through the nodes end after Statement Timeout + 1 s with error
 * items that name the cause, recorded on the server, nothing on a go-ahead output.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { ICredentialsDecrypted, ICredentialTestFunctions, INodeExecutionData } from 'n8n-workflow';
import { Client, Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { closeAllPools } from '../../../src/db/pool';
import { ReplicationUnconfirmedError } from '../../../src/db/bounds';
import { ledgerHealth } from '../../../src/ledger/admin/health';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { ledgerConnectionTest } from '../../../nodes/shared/connection';
import { testCredentials } from '../../helpers/fakeExecute';
import { sleep, startPrivatePostgres, startStandby, type PrivatePostgres } from '../../helpers/privatePostgres';
import { waitFor } from '../../helpers/wait';
import { confirm, enqueue, reserve } from './run';

jest.setTimeout(240_000);

const SCHEMA = 'hz_repl';
const NODES_ROLE = 'n8n_ledger_ha';
const OPERATOR_ROLE = 'n8n_ledger_ha_operator';
let primary: PrivatePostgres;
let standby: PrivatePostgres | undefined;

function psqlFile(pg: PrivatePostgres, file: string, vars: Record<string, string>) {
	execFileSync(
		path.join(pg.binDir, 'psql'),
		[pg.url, '-q', '-1', '-v', 'ON_ERROR_STOP=1', ...Object.entries(vars).flatMap(([k, v]) => ['-v', `${k}=${v}`]), '-f', file],
		{ stdio: 'pipe', cwd: path.resolve(__dirname, '../../..') },
	);
}

beforeAll(async () => {
	primary = await startPrivatePostgres({ name: 'repl', binaries: 'system', replication: true });
	const pool = new Pool({ connectionString: primary.url, max: 1 });
	await migrate(pool, ledgerSchema(SCHEMA), true);
	await pool.end();
	psqlFile(primary, 'schema/security/least_privilege_role.sql', { schema: SCHEMA, role: NODES_ROLE, password: 'unused-trust-auth' });
	psqlFile(primary, 'schema/security/operator_role.sql', { schema: SCHEMA, role: OPERATOR_ROLE, password: 'unused-trust-auth' });
});
afterAll(async () => {
	await closeAllPools();
	await standby?.destroy();
	await primary?.destroy();
});

async function credentialTest(url: string, extra: Record<string, unknown> = {}) {
	const data = testCredentials(url, SCHEMA, { autoApplySchema: false, ...extra });
	return ledgerConnectionTest.call({} as ICredentialTestFunctions, { id: '1', name: 'c', type: 'operationLedgerPostgresApi', data } as ICredentialsDecrypted);
}

async function health(url: string) {
	const pool = new Pool({ connectionString: url, max: 1 });
	try {
		return (await ledgerHealth(pool, ledgerSchema(SCHEMA), 1)).replication;
	} finally {
		await pool.end();
	}
}

async function reload(pg: PrivatePostgres, setting: string, value: string) {
	await pg.sql(`ALTER SYSTEM SET ${setting} = '${value}'`, [], 'postgres');
	await pg.sql('SELECT pg_reload_conf()', [], 'postgres');
	// The postmaster re-reads it asynchronously; wait until a new session sees it.
	await waitFor(async () => (await pg.sql<{ v: string }>(`SELECT current_setting('${setting}') AS v`, [], 'postgres'))[0].v === value, { what: `${setting} to become '${value}'` });
}

async function waitForSyncState(state: string) {
	await waitFor(async () => (await primary.sql<{ s: string }>("SELECT sync_state AS s FROM pg_stat_replication WHERE application_name = 'standby1'", [], 'postgres'))[0]?.s === state, {
		what: `standby1 to become ${state}`,
		timeoutMs: 10_000,
	});
}

/** Every item a node returned, split into error items and the rest (whatever the output indexes). */
function split(outputs: INodeExecutionData[][]) {
	const all = outputs.flat();
	return { errors: all.filter((it) => typeof it.json.error === 'string'), others: all.filter((it) => typeof it.json.error !== 'string') };
}

describe('replication report: credential test and Admin Health', () => {
	it('single server: the test passes, Health says single_server', async () => {
		expect(await credentialTest(primary.url)).toEqual({ status: 'OK', message: 'Connection successful' });
		expect(await credentialTest(primary.urlFor(NODES_ROLE))).toEqual({ status: 'OK', message: 'Connection successful' });
		const r = await health(primary.url);
		expect(r).toMatchObject({ verdict: 'single_server', role: 'primary', writable: true, readOnly: false, standbys: { count: 0 } });
	});

	it('asynchronous standby: the test fails and says what to change (unless Failover Check is Report in Health Only)', async () => {
		standby = await startStandby(primary, { name: 'repl-standby' });
		for (const url of [primary.url, primary.urlFor(NODES_ROLE)]) {
			const t = await credentialTest(url);
			expect(t.status).toBe('Error');
			expect(t.message).toMatch(/promise does not survive a failover: 1 standby\(s\) stream from this server asynchronously \(synchronous_standby_names is empty\)/);
			expect(t.message).toMatch(/ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1/);
			expect(await credentialTest(url, { failoverCheck: 'report' })).toEqual({ status: 'OK', message: 'Connection successful' });
		}
		const su = await health(primary.url);
		expect(su).toMatchObject({ verdict: 'asynchronous', failoverSafe: false, standbys: { count: 1, detailsVisible: true, synchronous: 0 } });
		expect(su.standbys.list).toEqual([expect.objectContaining({ name: 'standby1', state: 'streaming', syncState: 'async' })]);
		expect(su.unknown).toEqual([]);
		// The operator role sees the standby's connection but not its details: still known asynchronous
		// (nothing is configured to wait), and it says what it could not see.
		const op = await health(primary.urlFor(OPERATOR_ROLE));
		expect(op).toMatchObject({ verdict: 'asynchronous', standbys: { count: 1, detailsVisible: false, synchronous: null, list: null } });
		expect(op.unknown.join(' ')).toMatch(/GRANT pg_monitor TO n8n_ledger_ha_operator/);
	});

	it('synchronous standby: the test passes; a role without pg_monitor gets "unknown" with the grant that would tell', async () => {
		await reload(primary, 'synchronous_standby_names', 'standby1');
		await waitForSyncState('sync');
		expect(await credentialTest(primary.url)).toEqual({ status: 'OK', message: 'Connection successful' });
		expect(await credentialTest(primary.urlFor(NODES_ROLE))).toEqual({ status: 'OK', message: 'Connection successful' });
		const su = await health(primary.url);
		expect(su).toMatchObject({ verdict: 'synchronous', failoverSafe: true, writable: true, synchronousCommit: 'on', standbys: { count: 1, synchronous: 1 } });
		const op = await health(primary.urlFor(OPERATOR_ROLE));
		expect(op).toMatchObject({ verdict: 'unknown', failoverSafe: null, writable: true, standbys: { count: 1, synchronous: null } });
		// The operator role is NOINHERIT (schema/security/operator_role.sql): on PostgreSQL 15 a grant
		// alone gives it nothing, and the advice says so.
		expect(op.advice.join(' ')).toMatch(/GRANT pg_monitor TO n8n_ledger_ha_operator; ALTER ROLE n8n_ledger_ha_operator INHERIT/);
		await primary.sql(`GRANT pg_monitor TO ${OPERATOR_ROLE}`);
		try {
			expect(await health(primary.urlFor(OPERATOR_ROLE))).toMatchObject({ verdict: 'unknown', standbys: { detailsVisible: false } });
			await primary.sql(`ALTER ROLE ${OPERATOR_ROLE} INHERIT`);
			expect(await health(primary.urlFor(OPERATOR_ROLE))).toMatchObject({ verdict: 'synchronous', standbys: { detailsVisible: true, synchronous: 1 } });
		} finally {
			await primary.sql(`ALTER ROLE ${OPERATOR_ROLE} NOINHERIT`);
			await primary.sql(`REVOKE pg_monitor FROM ${OPERATOR_ROLE}`);
		}
	});

	it('a role whose commits do not wait (synchronous_commit = local) fails the test', async () => {
		await primary.sql(`ALTER ROLE ${NODES_ROLE} SET synchronous_commit = local`);
		try {
			const t = await credentialTest(primary.urlFor(NODES_ROLE));
			expect(t.status).toBe('Error');
			expect(t.message).toMatch(/commits of role n8n_ledger_ha do not wait for them \(synchronous_commit = local\)/);
			expect(t.message).toMatch(/ALTER ROLE n8n_ledger_ha SET synchronous_commit = on/);
		} finally {
			await primary.sql(`ALTER ROLE ${NODES_ROLE} RESET synchronous_commit`);
		}
	});

	it('a read-only role and a standby fail the test whatever Failover Check says', async () => {
		await primary.sql(`ALTER ROLE ${NODES_ROLE} SET default_transaction_read_only = on`);
		try {
			const t = await credentialTest(primary.urlFor(NODES_ROLE), { failoverCheck: 'report' });
			expect(t.status).toBe('Error');
			expect(t.message).toMatch(/cannot write here: Sessions of role n8n_ledger_ha are read-only \(default_transaction_read_only = on\)/);
		} finally {
			await primary.sql(`ALTER ROLE ${NODES_ROLE} RESET default_transaction_read_only`);
		}
		const s = await credentialTest(standby!.url, { failoverCheck: 'report' });
		expect(s.status).toBe('Error');
		expect(s.message).toMatch(/cannot write here: This server is a standby in recovery/);
		expect(s.message).toMatch(/writer endpoint/);
		expect(await health(standby!.url)).toMatchObject({ verdict: 'standby', role: 'standby', writable: false });
	});
});

describe('a synchronous standby that is gone', () => {
	let url: string;
	beforeAll(async () => {
		// synchronous_standby_names = 'standby1' (from above); the standby goes away.
		standby!.stop('fast');
		url = primary.urlFor(NODES_ROLE);
		await reload(primary, 'synchronous_standby_names', 'standby1');
	});

	it('the credential test says writes are blocked (no standby is connected)', async () => {
		const t = await credentialTest(url);
		expect(t.status).toBe('Error');
		expect(t.message).toMatch(/cannot write here: Every commit waits for a synchronous standby \(synchronous_standby_names = 'standby1', synchronous_commit = on\), and no standby is connected/);
		expect(t.message).toMatch(/ALTER SYSTEM SET synchronous_standby_names = ''/);
	});

	it('PostgreSQL 15: statement_timeout does not end the wait; a cancel does, committed locally with a WARNING', async () => {
		// Its own commit must not wait for the standby.
		const setup = new Client({ connectionString: primary.url });
		await setup.connect();
		await setup.query("SET synchronous_commit = local; CREATE TABLE IF NOT EXISTS public.syncrep_probe2 (x int)");
		await setup.end();

		const c = new Client({ connectionString: primary.url, application_name: 'syncrep-probe' });
		const notices: Array<{ severity?: string; message?: string }> = [];
		c.on('notice', (n) => notices.push(n));
		await c.connect();
		const started = Date.now();
		let settled = false;
		const q = c.query('BEGIN; SET LOCAL statement_timeout = 500; INSERT INTO public.syncrep_probe2 VALUES (1); COMMIT').finally(() => (settled = true));
		// The commit must still wait for the standby well past the statement timeout (500 ms): wait
		// until the server shows it waiting for the standby (SyncRep) six times that long.
		await waitFor(
			async () =>
				(await primary.sql("SELECT 1 FROM pg_stat_activity WHERE application_name = 'syncrep-probe' AND wait_event = 'SyncRep' AND clock_timestamp() - query_start >= interval '3 seconds'")).length === 1,
			{ what: 'the probe commit waiting for the standby (SyncRep) for 3 s', timeoutMs: 20_000, intervalMs: 100 },
		);
		// Six times the statement timeout, and still waiting for the standby.
		expect(settled).toBe(false);
		const [w] = await primary.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'syncrep-probe' AND wait_event = 'SyncRep'");
		expect(w.n).toBe(1);
		await primary.sql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'syncrep-probe'");
		await q; // COMMIT answered as a success
		expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
		expect(notices.map((n) => `${n.severity}: ${n.message}`)).toEqual(['WARNING: canceling wait for synchronous replication due to user request']);
		const [row] = await primary.sql<{ n: number }>('SELECT count(*)::int AS n FROM public.syncrep_probe2');
		expect(row.n).toBe(1); // committed locally
		await c.end();
	});

	it('Reserve ends after Statement Timeout + 1 s: error items that name the cause, recorded here, retry answers In Progress', async () => {
		const creds = testCredentials(url, SCHEMA, { autoApplySchema: false, statementTimeoutMs: 1000 });
		const keys = ['gone:reserve:1', 'gone:reserve:2'];
		const t0 = Date.now();
		const out = await reserve(creds, keys, {}, { continueOnFail: true });
		const took = Date.now() - t0;
		expect(took).toBeGreaterThanOrEqual(2000);
		expect(took).toBeLessThan(6000);
		const { errors, others } = split(out);
		expect(others).toEqual([]);
		expect(errors).toHaveLength(2);
		for (const e of errors) {
			expect(e.json.error).toMatch(/^Reserve Operation may have been recorded \(2 item\(s\)\): the batch was recorded on the database server, but waiting for synchronous replication was cancelled by the node after \d+ ms/);
			expect(e.json.error).toMatch(/Sending this item again is safe/);
			expect(e.json.retryable).toBe(true);
		}
		// Recorded on this server (the WARNING says committed locally) ...
		const rows = await primary.sql<{ operation_key: string; status: string }>(`SELECT operation_key, status FROM ${SCHEMA}.operations WHERE operation_key = ANY($1) ORDER BY 1`, [keys]);
		expect(rows).toEqual(keys.map((k) => ({ operation_key: k, status: 'reserved' })));
		// ... and the backend no longer waits: the node cancelled its wait.
		const [w] = await primary.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
		expect(w.n).toBe(0);
		// The core raises the error itself.
		const pool = new Pool({ connectionString: url, max: 1 });
		try {
			const err = await reserveOperations(pool, ledgerSchema(SCHEMA), [prepareReserveItem(0, { operationKey: 'gone:reserve:core', request: { a: 1 }, leaseSeconds: 60 })], {}, { statementTimeoutMs: 500, lockTimeoutMs: 500 }).catch((e) => e);
			expect(err).toBeInstanceOf(ReplicationUnconfirmedError);
			// Statement Timeout 500 ms + 1 s. Both ends are whole milliseconds of Date.now() while Node's
			// timer runs on the monotonic clock, so the figure can read up to 2 ms short (1499 seen once).
			expect((err as ReplicationUnconfirmedError).cancelledAfterMs).toBeGreaterThanOrEqual(1498);
		} finally {
			await pool.end();
		}
		// The retry (with the standby still gone) fails the same way; once writes can commit, it
		// meets its own reservation: In Progress, never a second Proceed.
		const again = split(await reserve(creds, keys, {}, { continueOnFail: true }));
		expect(again.others).toEqual([]);
		expect(again.errors.every((e) => /waiting for synchronous replication was cancelled/.test(String(e.json.error)))).toBe(true);
		await reload(primary, 'synchronous_standby_names', '');
		try {
			const after = await reserve(creds, keys, {}, { continueOnFail: true });
			const items = after.flat();
			expect(items).toHaveLength(2);
			for (const it of items) expect(it.json.outcome ?? (it.json.ledger as { outcome?: string })?.outcome).toBe('in_progress');
		} finally {
			await reload(primary, 'synchronous_standby_names', 'standby1');
		}
	});

	it('Confirm and Enqueue: Confirm is safe to repeat (Repeated), an Enqueue only with a dedupe key', async () => {
		const creds = testCredentials(url, SCHEMA, { autoApplySchema: false, statementTimeoutMs: 1000 });
		await reload(primary, 'synchronous_standby_names', '');
		const granted = (await reserve(creds, ['gone:confirm:1'])).flat();
		const lease = granted[0].json.ledger as { operationKey: string; leaseToken: string };
		expect(lease.leaseToken).toEqual(expect.any(String));
		await reload(primary, 'synchronous_standby_names', 'standby1');
		const c = split(await confirm(creds, [{ key: lease.operationKey, token: lease.leaseToken, ref: 'pay_1' }], {}, { continueOnFail: true }));
		expect(c.others).toEqual([]);
		expect(c.errors).toHaveLength(1);
		expect(c.errors[0].json.error).toMatch(/^Confirm Operation may have been recorded \(1 item\(s\)\): .*waiting for synchronous replication was cancelled.*Sending this item again is safe/);
		expect(c.errors[0].json.retryable).toBe(true);
		const [row] = await primary.sql<{ status: string }>(`SELECT status FROM ${SCHEMA}.operations WHERE operation_key = 'gone:confirm:1'`);
		expect(row.status).toBe('succeeded');

		const e = split(await enqueue(creds, 'gone-q', [{ n: 1 }, { n: 2 }], { dedupeKey: (i: number) => (i === 0 ? 'dedupe-1' : '') }, { continueOnFail: true }));
		expect(e.others).toEqual([]);
		expect(e.errors).toHaveLength(2);
		expect(e.errors[0].json).toMatchObject({ retryable: true });
		expect(e.errors[0].json.error).toMatch(/Sending this item again is safe/);
		expect(e.errors[1].json).toMatchObject({ retryable: false });
		expect(e.errors[1].json.error).toMatch(/would record it a second time/);

		await reload(primary, 'synchronous_standby_names', '');
		const again = (await confirm(creds, [{ key: lease.operationKey, token: lease.leaseToken, ref: 'pay_1' }])).flat();
		expect(again).toHaveLength(1);
		expect(JSON.stringify(again[0].json)).toMatch(/repeated/);
	});
});
