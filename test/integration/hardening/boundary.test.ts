/**
 * Issue 12, the database boundary, against a private Postgres with TLS (certificate for
 * DNS:localhost only, signed by a locally made CA) and scram-sha-256 passwords:
 *   - the SSL mode actually used for every credential SSL value x connection-string form is the
 *     stricter of the two (checked on the server in pg_stat_ssl; verify-full really verifies);
 *   - no ambient credentials: PGPASSWORD, PGPASSFILE/.pgpass, PGUSER, PGOPTIONS, PGSSLMODE of the
 *     n8n process are never used;
 *   - the credential test never throws and names each failure (table-driven);
 *   - killed backends (a migration waiting for its lock, a running query, idle pool clients, a
 *     LISTEN connection) never crash the process.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ICredentialsDecrypted, ICredentialTestFunctions } from 'n8n-workflow';
import { Pool as PlainPool, type Pool as PgPool } from 'pg';
import { ledgerConnectionTest } from '../../../nodes/shared/connection';
import { connectListener } from '../../../src/queue/listen';
import { stricterSslMode, type SslMode } from '../../../src/db/endpoint';
import { ensureSchema, migrate, readSchemaState } from '../../../src/db/migrate';
import { acquirePool, closeAllPools, getPool, toClientConfig, withClient, type ConnectionConfig } from '../../../src/db/pool';
import { IsolatedClient } from '../../../src/vendor';
import { freePort, startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';
import { makeCa, makeServerCert } from '../../helpers/tls';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(120_000);

const PW = 'Sup3r-secret-pw';
let pg: PrivatePostgres;
let caPem: string;
let otherCaPem: string;
const uncaught: unknown[] = [];
const onUncaught = (e: unknown) => uncaught.push(e);

beforeAll(async () => {
	process.on('uncaughtException', onUncaught);
	const ca = makeCa('boundary test CA');
	caPem = ca.cert;
	otherCaPem = makeCa('another CA').cert;
	const server = makeServerCert(ca, { dns: ['localhost'] });
	pg = await startPrivatePostgres({
		name: 'boundary',
		superuserPassword: PW,
		settings: { ssl: 'on', ssl_cert_file: "'server.crt'", ssl_key_file: "'server.key'" },
		files: { 'server.crt': server.cert, 'server.key': server.key },
	});
	await pg.sql(`CREATE ROLE alice LOGIN PASSWORD 'alice-pw'`);
});
afterAll(async () => {
	process.removeListener('uncaughtException', onUncaught);
	await closeAllPools();
	await pg?.destroy();
});

const base = (extra: Partial<ConnectionConfig> = {}): ConnectionConfig => ({
	host: '127.0.0.1',
	port: pg.port,
	database: 'ledger',
	user: 'postgres',
	password: PW,
	ssl: 'disable',
	schema: 'bd',
	...extra,
});

/** Connects with exactly what the nodes would use; returns whether the session is encrypted. */
async function sessionSsl(cfg: ConnectionConfig): Promise<boolean> {
	const c = new IsolatedClient(toClientConfig({ ...cfg, connectTimeoutMs: 5000 }));
	c.on('error', () => undefined);
	try {
		await c.connect();
		const { rows } = await c.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
		return rows[0].ssl as boolean;
	} finally {
		await c.end().catch(() => undefined);
	}
}

async function credentialTest(data: unknown) {
	return ledgerConnectionTest.call({} as ICredentialTestFunctions, { id: '1', name: 'c', type: 'operationLedgerPostgresApi', data } as ICredentialsDecrypted);
}

describe('SSL: the stricter of the credential and the connection string is used', () => {
	const credentialModes: SslMode[] = ['disable', 'require', 'verify-ca', 'verify-full'];
	const urlForms: Array<[string, SslMode | undefined]> = [
		['', undefined],
		['sslmode=disable', 'disable'],
		['sslmode=allow', 'allow'],
		['sslmode=prefer', 'prefer'],
		['sslmode=require', 'require'],
		['sslmode=verify-ca', 'verify-ca'],
		['sslmode=verify-full', 'verify-full'],
		['sslmode=no-verify', 'require'],
		['ssl=true', 'verify-full'],
		['ssl=false', 'disable'],
	];
	const cases = credentialModes.flatMap((cred) => urlForms.map(([q, m]) => [cred, q, m ? stricterSslMode(cred, m) : cred] as const));
	it.each(cases)('credential %s, URL ?%s -> %s', async (cred, query, expected) => {
		// 127.0.0.1 is not in the certificate: verify-full must refuse it, verify-ca must accept it.
		const url = `postgresql://postgres:${PW}@127.0.0.1:${pg.port}/ledger${query ? `?${query}` : ''}`;
		const cfg = base({ host: undefined, port: undefined, user: undefined, password: undefined, database: undefined, connectionString: url, ssl: cred, ca: caPem });
		if (expected === 'verify-full') {
			await expect(sessionSsl(cfg)).rejects.toThrow(/altnames|does not match|Hostname/i);
			const t = await credentialTest({ connectionType: 'connectionString', connectionString: url, ssl: cred, ca: caPem, schema: 'bd' });
			expect(t).toEqual({ status: 'Error', message: expect.stringMatching(/^SSL verification failed \(ERR_TLS_CERT_ALTNAME_INVALID\)/) });
		} else {
			expect(await sessionSsl(cfg)).toBe(expected !== 'disable');
		}
	});

	it('verify-full succeeds when the host name matches, and verify-ca/full refuse a wrong CA', async () => {
		expect(await sessionSsl(base({ host: 'localhost', ssl: 'verify-full', ca: caPem }))).toBe(true);
		const url = `postgres://postgres:${PW}@localhost:${pg.port}/ledger?sslmode=verify-full`;
		expect(await sessionSsl(base({ connectionString: url, ssl: 'disable', ca: caPem }))).toBe(true);
		for (const ssl of ['verify-ca', 'verify-full'] as const) {
			await expect(sessionSsl(base({ host: 'localhost', ssl, ca: otherCaPem }))).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
		}
	});

	it('the pool the nodes use honours a connection string sslmode over the default SSL field', async () => {
		const pool = getPool(base({ connectionString: `postgres://postgres:${PW}@127.0.0.1:${pg.port}/ledger?sslmode=require`, schema: 'bd_pool' }));
		const { rows } = await pool.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
		expect(rows[0].ssl).toBe(true);
	});
});

describe('no ambient credentials', () => {
	const saved = { ...process.env };
	let dir: string;
	beforeAll(() => {
		dir = mkdtempSync(path.join(os.tmpdir(), 'ol-pgpass-'));
		const pgpass = path.join(dir, 'pgpass');
		writeFileSync(pgpass, `*:*:*:*:${PW}\n`, { mode: 0o600 });
		Object.assign(process.env, {
			PGPASSWORD: PW,
			PGPASSFILE: pgpass,
			PGUSER: 'postgres',
			PGHOST: '127.0.0.1',
			PGPORT: String(pg.port),
			PGDATABASE: 'ledger',
			PGSSLMODE: 'disable',
			PGOPTIONS: '-c statement_timeout=4321',
			PGAPPNAME: 'ambient-app',
		});
	});
	afterAll(() => {
		process.env = { ...saved };
		rmSync(dir, { recursive: true, force: true });
	});

	it('an empty password is sent as empty: PGPASSWORD and .pgpass are never used', async () => {
		const t = await credentialTest({ connectionType: 'fields', host: '127.0.0.1', port: pg.port, database: 'ledger', user: 'postgres', password: '', ssl: 'disable', schema: 'bd' });
		expect(t).toEqual({ status: 'Error', message: 'Authentication failed: no password given for user "postgres" (the n8n host\'s PGPASSWORD and ~/.pgpass are never used)' });
		const url = `postgres://postgres@127.0.0.1:${pg.port}/ledger`;
		const t2 = await credentialTest({ connectionType: 'connectionString', connectionString: url, ssl: 'disable', schema: 'bd' });
		expect(t2.status).toBe('Error');
		expect(t2.message).toMatch(/^Authentication failed: no password given for user "postgres"/);
		const pool = getPool(base({ password: '', schema: 'bd_ambient' }));
		await expect(pool.query('SELECT 1')).rejects.toThrow(/password/);
	});

	it('PGOPTIONS, PGAPPNAME and PGSSLMODE do not change the session', async () => {
		const c = new IsolatedClient(toClientConfig(base({ ssl: 'require' })));
		c.on('error', () => undefined);
		await c.connect();
		try {
			const { rows } = await c.query(`SELECT current_setting('statement_timeout') AS st, current_setting('application_name') AS app, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl`);
			expect(rows[0]).toEqual({ st: '0', app: 'n8n-nodes-operation-ledger', ssl: true });
		} finally {
			await c.end();
		}
		// The nodes' pool too.
		const pool = getPool(base({ ssl: 'require', schema: 'bd_ambient_pool' }));
		const { rows } = await pool.query(`SELECT current_setting('statement_timeout') AS st, current_setting('application_name') AS app`);
		expect(rows[0]).toEqual({ st: '0', app: 'n8n-nodes-operation-ledger' });
	});

	it('an empty user or host is refused, never taken from PGUSER / PGHOST', async () => {
		expect(await credentialTest({ connectionType: 'fields', host: '127.0.0.1', port: pg.port, user: '', password: PW, schema: 'bd' })).toEqual({
			status: 'Error',
			message: 'No user: the credential must name the database user (the environment of the n8n host is never used)',
		});
		expect((await credentialTest({ connectionType: 'fields', host: '', port: pg.port, user: 'postgres', password: PW, schema: 'bd' })).message).toMatch(/^No host/);
	});
});

describe('the credential test never throws and names every failure', () => {
	const url = (auth: string, rest = '') => `postgres://${auth}@127.0.0.1:${(pg as PrivatePostgres).port}/ledger${rest}`;
	const table: Array<[string, () => unknown, RegExp]> = [
		['a malformed connection string', () => ({ connectionType: 'connectionString', connectionString: 'postgres://alice:p@ss@[::1/ledger', schema: 'bd' }), /^The connection string is not a valid URL/],
		['not a URL', () => ({ connectionType: 'connectionString', connectionString: 'host=x user=y', schema: 'bd' }), /must start with postgres:\/\//],
		['a wrong password in a connection string names its user', () => ({ connectionType: 'connectionString', connectionString: url('alice:wrong'), schema: 'bd' }), /^Authentication failed: wrong password for user "alice"$/],
		['a wrong password in fields names its user', () => ({ connectionType: 'fields', host: '127.0.0.1', port: pg.port, database: 'ledger', user: 'alice', password: 'nope', schema: 'bd' }), /^Authentication failed: wrong password for user "alice"$/],
		['a missing database', () => ({ connectionType: 'connectionString', connectionString: `postgres://alice:alice-pw@127.0.0.1:${pg.port}/nosuchdb`, schema: 'bd' }), /^The database does not exist/],
		['nothing listening', () => ({ connectionType: 'fields', host: '127.0.0.1', port: closedPort, user: 'alice', password: 'x', schema: 'bd' }), /^Connection refused at 127\.0\.0\.1:\d+/],
		['a file-reading parameter', () => ({ connectionType: 'connectionString', connectionString: url('alice:alice-pw', '?sslrootcert=/etc/hostname'), schema: 'bd' }), /"sslrootcert" is not supported/],
		['a wrong CA', () => ({ connectionType: 'fields', host: 'localhost', port: pg.port, database: 'ledger', user: 'alice', password: 'alice-pw', ssl: 'verify-ca', ca: otherCaPem, schema: 'bd' }), /^SSL verification failed \(/],
		['an invalid schema name', () => ({ connectionType: 'fields', host: '127.0.0.1', port: pg.port, user: 'alice', password: 'alice-pw', schema: 'Bad"Schema' }), /schema/i],
		['a missing connection string', () => ({ connectionType: 'connectionString', schema: 'bd' }), /^The connection string is empty/],
		['an unknown SSL value', () => ({ connectionType: 'fields', host: '127.0.0.1', port: pg.port, user: 'alice', password: 'alice-pw', ssl: 'sometimes', schema: 'bd' }), /unknown SSL mode/],
	];
	let closedPort = 1;
	beforeAll(async () => {
		closedPort = await freePort();
	});
	it.each(table)('%s', async (_what, data, message) => {
		const t = await credentialTest(data());
		expect(t.status).toBe('Error');
		expect(t.message).toMatch(message);
		expect(t.message).not.toMatch(/alice-pw|Sup3r|p@ss/);
	});

	it('a good credential is OK', async () => {
		expect(await credentialTest({ connectionType: 'connectionString', connectionString: url('alice:alice-pw', '?sslmode=verify-ca'), ca: caPem, schema: 'bd' })).toEqual({
			status: 'OK',
			message: 'Connection successful',
		});
	});
});

describe('killed backends never crash the process', () => {
	const APP = 'n8n-nodes-operation-ledger';
	const kill = async (where: string) =>
		pg.sql<{ ok: boolean }>(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE $1 || '%' AND ${where}`, [APP]);

	afterEach(() => {
		expect(uncaught).toEqual([]);
	});

	/**
	 * Holds the migrator's advisory lock for `schema` in another session, starts `migration` (which
	 * then waits for it), waits up to 5 s for this package's backend to wait on a lock, kills that
	 * backend, releases the lock and returns how `migration` ended ('resolved' or its error message).
	 */
	async function killWaitingMigration(schema: string, migration: () => Promise<unknown>): Promise<string> {
		const holder = new IsolatedClient(toClientConfig(base()));
		holder.on('error', () => undefined);
		await holder.connect();
		try {
			await holder.query('BEGIN');
			await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended('n8n-nodes-operation-ledger:migrate:' || $1, 0))`, [schema]);
			const running = migration().then(
				() => 'resolved',
				(e: Error) => e.message,
			);
			await waitFor(async () => (await pg.sql(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [APP])).length > 0, {
				what: 'the migration waiting for its lock',
			});
			expect((await kill(`wait_event_type = 'Lock'`)).length).toBe(1);
			return await running;
		} finally {
			await holder.query('ROLLBACK').catch(() => undefined);
			await holder.end();
		}
	}

	it('while a migration waits for its lock', async () => {
		const schema = 'bd_kill_migrate';
		const pool = getPool(base({ schema }));
		expect(await killWaitingMigration(schema, () => ensureSchema(pool, ledgerSchema(schema), true))).toMatch(/terminat|Connection/i);
		// The pool recovers: the next use applies the schema.
		await expect(ensureSchema(pool, ledgerSchema(schema), true)).resolves.toBeGreaterThan(0);
		expect((await readSchemaState(pool, ledgerSchema(schema))).version).toBeGreaterThan(0);
	});

	it('during a query (pooled and checked out)', async () => {
		const pool = getPool(base({ schema: 'bd_kill_query' }));
		const a = pool.query('SELECT pg_sleep(30)').then(
			() => 'resolved',
			(e: Error) => e.message,
		);
		const b = withClient(pool, 60_000, (c) => c.query('SELECT pg_sleep(30)')).then(
			() => 'resolved',
			(e: Error) => e.message,
		);
		await waitFor(async () => (await pg.sql(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'SELECT pg_sleep(30)%'`, [APP])).length === 2, {
			what: 'both queries running',
		});
		expect((await kill(`query LIKE 'SELECT pg_sleep(30)%'`)).length).toBe(2);
		expect(await a).toMatch(/terminat|Connection/i);
		expect(await b).toMatch(/terminat|Connection/i);
		expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
	});

	it('while idle', async () => {
		// The pool itself (leased), so its idle clients can be counted before they are killed.
		const lease = acquirePool(base({ schema: 'bd_kill_idle' }));
		const pool: PgPool = lease.pool;
		try {
			await Promise.all([pool.query('SELECT pg_sleep(0.2)'), pool.query('SELECT pg_sleep(0.2)')]);
			expect(pool.idleCount).toBe(2);
			expect((await kill(`state = 'idle' AND query LIKE 'SELECT pg_sleep(0.2)%'`)).length).toBe(2);
			// The state that shows the pool noticed: both killed clients are gone from it.
			await waitFor(() => pool.totalCount === 0, { what: 'the pool dropped its two killed idle clients' });
			expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
		} finally {
			lease.release();
		}
	});

	it('during a LISTEN', async () => {
		const conn = await connectListener(base({ schema: 'bd_kill_listen' }));
		const lost = new Promise<Error | undefined>((resolve) => conn.onLost(resolve));
		await conn.listen('bd_kill_listen_channel');
		expect((await kill(`application_name = '${APP}:listen'`)).length).toBe(1);
		await lost;
		await conn.close().catch(() => undefined);
	});

	it('during the credential test and the migrator on a pool without listeners', async () => {
		// migrate() on a plain pg Pool (no pool-level listener) still survives a kill mid-migration.
		const schema = 'bd_kill_plain';
		const plain = new PlainPool({ ...toClientConfig(base()), max: 2 });
		plain.on('error', () => undefined);
		expect(await killWaitingMigration(schema, () => migrate(plain, ledgerSchema(schema), true))).toMatch(/terminat|Connection/i);
		await plain.end();
	});
});
