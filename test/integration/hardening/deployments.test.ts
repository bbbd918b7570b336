/**
 * Case 3: deployments users run.
 *   - PgBouncer (Debian's package) in transaction pooling mode in front of a private Postgres:
 *     Reserve, Confirm, Reconcile claim/resolve, enqueue, dequeue, complete all work through it;
 *     every queue call works under its statement and lock timeouts (SET LOCAL, no startup
 *     parameters), a lock timeout fires cleanly, and no timeout leaks to a server connection;
 *     the trigger works by polling (LISTEN off); auto-applying the schema through it is safe
 *     (one transaction, transaction-level advisory lock: nothing leaks to a shared server
 *     connection); applying the schema directly with auto-apply off works too.
 *   - SSL verify-full with a locally made CA: the right CA works; a wrong CA fails with a clear
 *     message from the credential test and from a node execution; `require` works without a CA.
 *   - Two workflows with different credentials and schema names in one process stay isolated.
 *   - 50 concurrent executions through one credential (maxConnections 5) against a server with
 *     max_connections = 20 never exhaust connections.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import type { ICredentialsDecrypted, ICredentialTestFunctions } from 'n8n-workflow';
import { Client, Pool } from 'pg';
import { ledgerConnectionTest } from '../../../nodes/shared/connection';
import { QueueWatcher } from '../../../src/queue/watcher';
import { loadMigrations, migrate, requiredVersion } from '../../../src/db/migrate';
import { closeAllPools, openPoolCount } from '../../../src/db/pool';
import * as Q from '../../../src/queue';
import { dequeue as coreDequeue, nextDue, queueChannel } from '../../../src/queue';
import { LedgerBusyError } from '../../../src/db/bounds';
import { testCredentials } from '../../helpers/fakeExecute';
import { startPgbouncer, type Bouncer } from '../../helpers/pgbouncer';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';
import { makeCa, makeServerCert } from '../../helpers/tls';
import { waitFor } from '../../helpers/wait';
import { claim, complete, confirm, dequeue, enqueue, reserve, resolve, settle } from './run';

jest.setTimeout(180_000);

afterAll(async () => {
	await closeAllPools();
});

async function credentialTest(data: Record<string, unknown>) {
	return ledgerConnectionTest.call({} as ICredentialTestFunctions, { id: '1', name: 'c', type: 'operationLedgerPostgresApi', data } as ICredentialsDecrypted);
}

/** The whole ledger and queue round through one credential; asserts each step. */
/**
 * Reserve, Confirm, Reserve again, Claim and Resolve through `creds` (its schema on the database
 * `ledger` of `pg`). The operations' 1 s settle window is passed by moving that schema's ledger
 * clock 2 s on (put back before returning), not by waiting.
 */
async function roundTrip(pg: PrivatePostgres, creds: Record<string, unknown>, tag: string) {
	const moveLedgerClock = (seconds: number) =>
		pg.sql(`CREATE OR REPLACE FUNCTION "${String(creds.schema)}".ledger_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() + make_interval(secs => ${seconds}) $$`);
	const keys = [`${tag}:1`, `${tag}:2`, `${tag}:3`];
	const r = await reserve(creds, keys, { target: tag, settleSeconds: 1 });
	expect(r[1]).toHaveLength(3);
	const leases = r[1].map((it) => it.json.ledger as { operationKey: string; leaseToken: string });
	const c = await confirm(creds, [
		{ key: leases[0].operationKey, token: leases[0].leaseToken, outcome: 'succeeded', ref: 'p1' },
		{ key: leases[1].operationKey, token: leases[1].leaseToken, outcome: 'unknown', reason: 'timeout' },
		{ key: leases[2].operationKey, token: leases[2].leaseToken, outcome: 'unknown', reason: 'timeout' },
	]);
	expect(c[1]).toHaveLength(1);
	expect(c[3]).toHaveLength(2);
	const again = await reserve(creds, keys, { target: tag });
	expect(again[2]).toHaveLength(1); // already succeeded
	expect(again[4]).toHaveLength(2); // needs reconcile
	await moveLedgerClock(2); // past the operations' 1 s settle window
	const cl = await claim(creds, { target: tag });
	expect(cl[1]).toHaveLength(2);
	const rs = await resolve(
		creds,
		cl[1].map((it) => {
			const rec = it.json.reconcile as { operationKey: string; claimToken: string };
			return { key: rec.operationKey, claimToken: rec.claimToken, resolution: 'happened', ref: `found-${rec.operationKey}` };
		}),
	);
	expect(rs[2]).toHaveLength(2);
	await moveLedgerClock(0);
	const queue = `q-${tag}`;
	const enq = await enqueue(creds, queue, [{ a: 1 }, { a: 2 }]);
	expect(enq[1].map((it) => typeof it.json.taskId)).toEqual(['string', 'string']);
	const dq = await dequeue(creds, queue, 10);
	expect(dq[1]).toHaveLength(2);
	const done = await complete(creds, dq[1].map((it) => ({ taskId: it.json.taskId, leaseToken: it.json.leaseToken })));
	expect(done[1].map((it) => it.json.outcome)).toEqual(['completed', 'completed']);
}

describe('PgBouncer in transaction pooling mode', () => {
	let pg: PrivatePostgres;
	let bouncer: Bouncer;
	beforeAll(async () => {
		pg = await startPrivatePostgres({ name: 'bouncer' });
		bouncer = await startPgbouncer(pg.port, 'transaction', 3);
	});
	afterAll(async () => {
		await closeAllPools();
		await bouncer?.stop();
		await pg?.destroy();
	});

	it('is really in transaction mode (admin console)', async () => {
		const c = new Client({ connectionString: bouncer.adminUrl });
		await c.connect();
		const { rows } = await c.query('SHOW CONFIG');
		await c.end();
		expect(rows.find((r) => r.key === 'pool_mode')?.value).toBe('transaction');
	});

	it('schema applied directly (psql-style, auto-apply off): every node operation works through PgBouncer', async () => {
		const direct = new Pool({ connectionString: pg.url, max: 1 });
		await migrate(direct, ledgerSchema('hz_bouncer_direct'), true);
		await direct.end();
		await roundTrip(pg, testCredentials(bouncer.url, 'hz_bouncer_direct', { autoApplySchema: false }), 'bd');
	});

	it('auto-apply through PgBouncer: 8 concurrent first uses apply once; no advisory lock or search_path leaks to server connections', async () => {
		const schema = 'hz_bouncer_auto';
		// Eight processes' worth of pools, each with its own credential (maxConnections differs).
		const results = await Promise.all(
			Array.from({ length: 8 }, (_, i) => settle(reserve(testCredentials(bouncer.url, schema, { maxConnections: i + 2 }), [`auto:${i}`]))),
		);
		for (const r of results) expect(r.ok).toBe(true);
		const [v] = await pg.sql<{ n: number; max: number }>(`SELECT count(*)::int AS n, max(version)::int AS max FROM "${schema}".ol_schema_migrations`);
		expect(v).toEqual({ n: loadMigrations().length, max: requiredVersion() });
		const locks = await pg.sql(`SELECT pid FROM pg_locks WHERE locktype = 'advisory'`);
		expect(locks).toEqual([]);
		// Every server connection PgBouncer holds still has the default search_path.
		const paths = new Set<string>();
		const pool = new Pool({ connectionString: bouncer.url, max: 6 });
		await Promise.all(
			Array.from({ length: 30 }, async () => {
				const { rows } = await pool.query('SHOW search_path');
				paths.add(rows[0].search_path);
			}),
		);
		await pool.end();
		expect([...paths]).toEqual(['"$user", public']);
		await roundTrip(pg, testCredentials(bouncer.url, schema), 'ba');
	});

	it('the queue path under its statement and lock timeouts: every call works, a lock timeout fires cleanly, nothing leaks to server connections', async () => {
		const schema = 'hz_bouncer_bounds';
		const direct = new Pool({ connectionString: pg.url, max: 1 });
		await migrate(direct, ledgerSchema(schema), true);
		const pool = new Pool({ connectionString: bouncer.url, max: 2 });
		const b = { statementTimeoutMs: 5_000, lockTimeoutMs: 300 };
		const queue = 'bounded';
		try {
			const enq = await Q.enqueue(pool, ledgerSchema(schema), [1, 2, 3, 4].map((n) => ({ queue, group: 'normal', payload: { n } })), { notify: 'after' }, b);
			expect(enq).toHaveLength(4);
			expect((await Q.nextDueFor(pool, ledgerSchema(schema), queue, ['normal'], b)).due).toBe(true);
			const tasks = await Q.dequeue(pool, ledgerSchema(schema), { queue, limit: 4, leaseSeconds: 60 }, b);
			expect(tasks).toHaveLength(4);
			const key = (t: Q.ClaimedTask) => ({ taskId: t.taskId, leaseToken: t.leaseToken });
			expect((await Q.extendLease(pool, ledgerSchema(schema), [{ ...key(tasks[0]), leaseSeconds: 120 }], b))[0].outcome).toBe('extended');
			expect((await Q.complete(pool, ledgerSchema(schema), [key(tasks[0])], b))[0].outcome).toBe('completed');
			expect((await Q.fail(pool, ledgerSchema(schema), [{ ...key(tasks[1]), error: 'x', giveUp: true }], {}, b))[0].outcome).toBe('dead');
			expect((await Q.release(pool, ledgerSchema(schema), [key(tasks[2])], b))[0].outcome).toBe('released');
			expect((await Q.requeueDead(pool, ledgerSchema(schema), { queue, taskIds: [tasks[1].taskId] }, b))[0].outcome).toBe('requeued');
			expect(await Q.purge(pool, ledgerSchema(schema), { queue, archiveAfterSeconds: 0 }, b)).toEqual({ deadArchived: 0, archiveDeleted: 1 });
			const st = await Q.stats(pool, ledgerSchema(schema), queue, b);
			expect({ ready: st.ready, inFlight: st.inFlight }).toEqual({ ready: 2, inFlight: 1 });
			expect((await Q.nextDue(pool, ledgerSchema(schema), queue, b)).due).toBe(true);
			// A task another session holds: the settle answers within the lock timeout.
			const holder = new Client({ connectionString: pg.url });
			await holder.connect();
			await holder.query('BEGIN');
			await holder.query(`SELECT 1 FROM "${schema}".queue_tasks WHERE id = $1 FOR UPDATE`, [tasks[3].taskId]);
			try {
				const t0 = Date.now();
				const err = await Q.complete(pool, ledgerSchema(schema), [key(tasks[3])], b).catch((e: unknown) => e);
				expect(err).toBeInstanceOf(LedgerBusyError);
				expect((err as LedgerBusyError).code).toBe('55P03');
				expect(Date.now() - t0).toBeLessThan(3_000);
			} finally {
				await holder.query('ROLLBACK');
				await holder.end();
			}
			expect((await Q.complete(pool, ledgerSchema(schema), [key(tasks[3])], b))[0].outcome).toBe('completed');
			// SET LOCAL ended with each transaction: every server connection has the defaults.
			const seen = new Set<string>();
			const wide = new Pool({ connectionString: bouncer.url, max: 6 });
			await Promise.all(
				Array.from({ length: 30 }, async () => {
					const { rows } = await wide.query(`SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l`);
					seen.add(`${rows[0].s}/${rows[0].l}`);
				}),
			);
			await wide.end();
			expect([...seen]).toEqual(['0/0']);
		} finally {
			await pool.end();
			await direct.end();
		}
	});

	it('the trigger with "Use LISTEN/NOTIFY" off finds work by polling through PgBouncer', async () => {
		const schema = 'hz_bouncer_direct';
		const queue = 'trigger-poll';
		const pool = new Pool({ connectionString: bouncer.url, max: 2 });
		const fired: string[] = [];
		let claimed = 0;
		const w = new QueueWatcher({
			channel: queueChannel(ledgerSchema(schema), queue),
			pollMs: 100,
			maxInFlight: 1,
			inFlightTimeoutMs: 60_000,
			check: () => nextDue(pool, ledgerSchema(schema), queue),
			fire: async (reason) => {
				fired.push(reason);
				claimed += (await coreDequeue(pool, ledgerSchema(schema), { queue, limit: 10, leaseSeconds: 60 })).length;
				return { finished: Promise.resolve() };
			},
			connect: undefined,
		});
		await w.start();
		await enqueue(testCredentials(bouncer.url, schema, { autoApplySchema: false }), queue, [{ x: 1 }]);
		await waitFor(() => claimed > 0, { what: 'a claim through pgbouncer', timeoutMs: 5000 });
		await w.close();
		await pool.end();
		expect(claimed).toBe(1);
		expect(fired.length).toBeGreaterThan(0);
	});
});

describe('SSL verify-full with a locally made CA', () => {
	let pg: PrivatePostgres;
	let caPem: string;
	let otherCaPem: string;
	const SCHEMA = 'hz_ssl';
	beforeAll(async () => {
		const ca = makeCa('operation-ledger test CA');
		const server = makeServerCert(ca);
		caPem = ca.cert;
		otherCaPem = makeCa('some other CA').cert;
		pg = await startPrivatePostgres({
			name: 'ssl',
			settings: { ssl: 'on', ssl_cert_file: "'server.crt'", ssl_key_file: "'server.key'" },
			files: { 'server.crt': server.cert, 'server.key': server.key },
		});
		// Only SSL connections over TCP.
		await pg.sql(`SELECT 1`);
		const direct = new Pool({ connectionString: pg.url, max: 1, ssl: { ca: caPem } });
		await migrate(direct, ledgerSchema(SCHEMA), true);
		const { rows } = await direct.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
		expect(rows[0].ssl).toBe(true);
		await direct.end();
	});
	afterAll(async () => {
		await closeAllPools();
		await pg?.destroy();
	});
	const fields = (extra: Record<string, unknown>) => ({
		connectionType: 'fields',
		host: '127.0.0.1',
		port: pg.port,
		database: 'ledger',
		user: 'postgres',
		password: '',
		schema: SCHEMA,
		autoApplySchema: false,
		...extra,
	});

	it('verify-full with the right CA: credential test OK, nodes work, the connection is encrypted', async () => {
		expect(await credentialTest(fields({ ssl: 'verify-full', ca: caPem }))).toEqual({ status: 'OK', message: 'Connection successful' });
		const creds = fields({ ssl: 'verify-full', ca: caPem, maxConnections: 2 });
		await roundTrip(pg, creds, 'ssl-ok');
		const [r] = await pg.sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'n8n-nodes-operation-ledger' AND s.ssl`);
		expect(r.n).toBeGreaterThan(0);
	});

	it('verify-full with localhost as host name also matches the certificate (SAN DNS:localhost)', async () => {
		expect(await credentialTest(fields({ host: 'localhost', ssl: 'verify-full', ca: caPem }))).toMatchObject({ status: 'OK' });
	});

	it('verify-full with a wrong CA fails clearly: credential test and node execution', async () => {
		const test = await credentialTest(fields({ ssl: 'verify-full', ca: otherCaPem }));
		expect(test.status).toBe('Error');
		expect(test.message).toMatch(/^SSL verification failed \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\): check the CA certificate/);
		const r = await settle(reserve(fields({ ssl: 'verify-full', ca: otherCaPem, maxConnections: 1 }), ['ssl:bad:1']));
		expect(r.ok).toBe(false);
		const err = (r as { error: Error & { description?: string } }).error;
		expect(err.message).toMatch(/^Reserve Operation failed and nothing of this batch was recorded \(1 item\(s\)\): the database connection failed: .*(self[- ]signed|unable to (get|verify))/i);
		expect(await pg.sql(`SELECT 1 FROM "${SCHEMA}".operations WHERE operation_key = 'ssl:bad:1'`)).toEqual([]);
	});

	it('require (no CA) encrypts without verifying and works', async () => {
		expect(await credentialTest(fields({ ssl: 'require' }))).toMatchObject({ status: 'OK' });
		await roundTrip(pg, fields({ ssl: 'require', maxConnections: 3 }), 'ssl-req');
	});
});

describe('one process, many workflows and executions', () => {
	let pg: PrivatePostgres;
	beforeAll(async () => {
		pg = await startPrivatePostgres({ name: 'conc', settings: { max_connections: '20' } });
		await pg.sql(`CREATE ROLE wf_a LOGIN; CREATE ROLE wf_b LOGIN; GRANT CREATE ON DATABASE ledger TO wf_a, wf_b`);
	});
	afterAll(async () => {
		await closeAllPools();
		await pg?.destroy();
	});

	it('two workflows with different credentials and schema names stay isolated', async () => {
		const a = testCredentials(pg.urlFor('wf_a'), 'ledger_a');
		const b = testCredentials(pg.urlFor('wf_b'), 'ledger_b');
		// The same key and the same queue name in both workflows, at the same time.
		const [ra, rb] = await Promise.all([reserve(a, ['same:key'], {}, { workflowId: 'A' }), reserve(b, ['same:key'], {}, { workflowId: 'B' })]);
		expect(ra[1]).toHaveLength(1);
		expect(rb[1]).toHaveLength(1); // not "in progress": b never sees a's row
		await Promise.all([enqueue(a, 'shared', [{ from: 'a' }]), enqueue(b, 'shared', [{ from: 'b' }])]);
		const [da, db] = await Promise.all([dequeue(a, 'shared', 10), dequeue(b, 'shared', 10)]);
		expect(da[1].map((it) => it.json.payload)).toEqual([{ from: 'a' }]);
		expect(db[1].map((it) => it.json.payload)).toEqual([{ from: 'b' }]);
		const rows = await pg.sql<{ schema: string; owner: string; wf: string }>(
			`SELECT 'a' AS schema, (SELECT tableowner FROM pg_tables WHERE schemaname = 'ledger_a' AND tablename = 'operations') AS owner, workflow_id AS wf FROM ledger_a.operation_events
			 UNION ALL
			 SELECT 'b', (SELECT tableowner FROM pg_tables WHERE schemaname = 'ledger_b' AND tablename = 'operations'), workflow_id FROM ledger_b.operation_events`,
		);
		expect(rows).toEqual([
			{ schema: 'a', owner: 'wf_a', wf: 'A' },
			{ schema: 'b', owner: 'wf_b', wf: 'B' },
		]);
		// wf_b's credential cannot read wf_a's ledger (the schema is wf_a's).
		const cb = new Client({ connectionString: pg.urlFor('wf_b') });
		await cb.connect();
		await expect(cb.query('SELECT * FROM ledger_a.operations')).rejects.toThrow(/permission denied/);
		await cb.end();
		expect(openPoolCount()).toBeGreaterThanOrEqual(2);
	});

	it('50 concurrent executions through one credential (maxConnections 5, server max_connections 20) never exhaust connections', async () => {
		const creds = testCredentials(pg.url, 'hz_conc', { maxConnections: 5 });
		await reserve(creds, ['warm:up']);
		let peak = 0;
		let sampling = true;
		// One connection of its own (not the nodes' application_name), sampling back to back: each
		// sample waits for its own query, so there is no pause to miss a peak in.
		const probe = new Client({ connectionString: pg.url });
		await probe.connect();
		const sampler = (async () => {
			try {
				while (sampling) {
					const { rows } = await probe.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'n8n-nodes-operation-ledger' AND usename = 'postgres'`);
					peak = Math.max(peak, rows[0].n);
				}
			} finally {
				await probe.end();
			}
		})();
		const runs = await Promise.all(
			Array.from({ length: 50 }, (_, i) =>
				settle(
					(async () => {
						const keys = Array.from({ length: 20 }, (_, k) => `conc:${i}:${k}`);
						const r = await reserve(creds, keys, {}, { executionId: `e${i}` });
						const leases = r[1].map((it) => it.json.ledger as { operationKey: string; leaseToken: string });
						await confirm(creds, leases.map((l) => ({ key: l.operationKey, token: l.leaseToken })), {}, { executionId: `e${i}` });
						await enqueue(creds, 'conc', [{ i }]);
						return dequeue(creds, 'conc', 1);
					})(),
				),
			),
		);
		sampling = false;
		await sampler;
		const failures = runs.filter((r) => !r.ok).map((r) => (r as { error: Error }).error.message);
		expect(failures).toEqual([]);
		expect(peak).toBeGreaterThan(0); // the sampler saw the executions
		expect(peak).toBeLessThanOrEqual(5);
		const [c] = await pg.sql<{ ok: number; tasks: number }>(
			`SELECT (SELECT count(*)::int FROM hz_conc.operations WHERE status = 'succeeded') AS ok, (SELECT count(*)::int FROM hz_conc.queue_tasks WHERE status = 'processing') AS tasks`,
		);
		expect(c).toEqual({ ok: 1000, tasks: 50 });
		expect(pg.log()).not.toMatch(/too many clients|remaining connection slots/);
	});
});
