import { execFileSync } from 'node:child_process';
import { Pool } from 'pg';
import { currentVersion, loadFunctionSet, loadMigrations, migrate, readSchemaState, requiredVersion, SchemaNotReadyError } from '../../../src/db/migrate';
import { InvalidSchemaNameError } from '../../../src/db/identifiers';
import { ledgerConnectionTest } from '../../../nodes/shared/connection';
import { DATABASE_URL, randomSchema } from '../../helpers/db';
import type { ICredentialDataDecryptedObject, ICredentialTestFunctions } from 'n8n-workflow';

const pool = new Pool({ connectionString: DATABASE_URL, max: 8 });
const created: string[] = [];
afterAll(async () => {
	for (const s of created) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
	await pool.end();
});
const fresh = () => {
	const s = randomSchema('ol_mig');
	created.push(s);
	return s;
};

describe('migrations', () => {
	it('applies every migration once even when 6 workers start at the same moment', async () => {
		const schema = fresh();
		const versions = await Promise.all(Array.from({ length: 6 }, () => migrate(pool, schema, true)));
		expect(new Set(versions)).toEqual(new Set([requiredVersion()]));
		const { rows } = await pool.query(`SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`);
		expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
	});

	it('refuses to apply when auto-apply is off, with a message that says what to do', async () => {
		const schema = fresh();
		await expect(migrate(pool, schema, false)).rejects.toBeInstanceOf(SchemaNotReadyError);
		await expect(migrate(pool, schema, false)).rejects.toThrow(/Apply schema\/apply\.sql with psql/);
		expect(await currentVersion(pool, schema)).toBe(0);
	});

	it('schema/apply.sql applies with psql as a DBA would (twice: the second run is an upgrade that changes nothing), and the nodes accept it', async () => {
		const schema = fresh();
		for (let run = 0; run < 2; run++) {
			execFileSync('psql', [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-f', 'schema/apply.sql'], { stdio: 'pipe' });
		}
		const state = await readSchemaState(pool, schema);
		expect(state).toEqual({ version: requiredVersion(), functions: { packageVersion: loadFunctionSet().packageVersion, hash: loadFunctionSet().hash } });
		await expect(migrate(pool, schema, false)).resolves.toBe(requiredVersion());
		const { rows } = await pool.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
		expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
	});

	it('re-applies the function set when it differs from this package\'s, and records it', async () => {
		const schema = fresh();
		await migrate(pool, schema, true);
		// A function changed by hand and a stale record, as after an older package of the same version.
		await pool.query(`CREATE OR REPLACE FUNCTION "${schema}".downstream_idempotency_key(p_key text, p_attempt integer) RETURNS text LANGUAGE sql AS $$ SELECT 'tampered' $$`);
		await pool.query(`UPDATE "${schema}".function_set SET functions_hash = 'old'`);
		await expect(migrate(pool, schema, false)).rejects.toThrow(/differ from this package/);
		await migrate(pool, schema, true);
		const { rows } = await pool.query(`SELECT "${schema}".downstream_idempotency_key('k', 1) AS k`);
		expect(rows[0].k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect((await readSchemaState(pool, schema)).functions?.hash).toBe(loadFunctionSet().hash);
	});

	it('upgrades a schema made before the function set was recorded (migrations 1 to 3 only)', async () => {
		const schema = fresh();
		await migrate(pool, schema, true);
		await pool.query(`DROP TABLE "${schema}".function_set; DELETE FROM "${schema}".schema_migrations WHERE version >= 4`);
		expect(await readSchemaState(pool, schema)).toEqual({ version: 3, functions: null });
		await expect(migrate(pool, schema, true)).resolves.toBe(requiredVersion());
		expect((await readSchemaState(pool, schema)).functions?.hash).toBe(loadFunctionSet().hash);
	});

	it('never replaces the functions of a newer package version, with auto-apply on or off', async () => {
		const schema = fresh();
		await migrate(pool, schema, true);
		await pool.query(`UPDATE "${schema}".function_set SET package_version = '99.0.0', functions_hash = 'newer'`);
		for (const auto of [true, false]) {
			await expect(migrate(pool, schema, auto)).rejects.toThrow(/newer than this package/);
		}
		expect((await readSchemaState(pool, schema)).functions).toEqual({ packageVersion: '99.0.0', hash: 'newer' });
		// psql's apply.sql refuses too, and changes nothing.
		expect(() =>
			execFileSync('psql', [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-f', 'schema/apply.sql'], { stdio: 'pipe' }),
		).toThrow(/a newer n8n-nodes-operation-ledger installed its functions/);
		expect((await readSchemaState(pool, schema)).functions).toEqual({ packageVersion: '99.0.0', hash: 'newer' });
	});

	it('rejects schema names that try to inject SQL', async () => {
		for (const bad of ['x"; DROP TABLE y; --', 'Upper', '1abc', '', 'a'.repeat(64), 'a b']) {
			await expect(migrate(pool, bad, true)).rejects.toBeInstanceOf(InvalidSchemaNameError);
		}
	});
});

describe('credential test', () => {
	const url = new URL(DATABASE_URL);
	const base = {
		connectionType: 'fields',
		host: url.hostname,
		port: Number(url.port || 5432),
		database: url.pathname.slice(1),
		user: decodeURIComponent(url.username || 'postgres'),
		password: decodeURIComponent(url.password || ''),
		ssl: 'disable',
		schema: 'operation_ledger',
		autoApplySchema: true,
	};
	const test = (data: Record<string, unknown>) =>
		ledgerConnectionTest.call({} as ICredentialTestFunctions, { id: '1', name: 'x', type: 'operationLedgerPostgresApi', data: data as ICredentialDataDecryptedObject });

	it('says OK when it can connect', async () => {
		await expect(test(base)).resolves.toEqual({ status: 'OK', message: 'Connection successful' });
	});

	it('names a missing database', async () => {
		const r = await test({ ...base, database: 'no_such_db_for_ledger' });
		expect(r).toMatchObject({ status: 'Error', message: expect.stringMatching(/database does not exist.*no_such_db_for_ledger/) });
	});

	it('names a refused connection', async () => {
		const r = await test({ ...base, host: '127.0.0.1', port: 1 });
		expect(r).toMatchObject({ status: 'Error', message: expect.stringMatching(/Connection refused at 127\.0\.0\.1:1/) });
	});

	it('says the schema is missing when auto-apply is off', async () => {
		const r = await test({ ...base, schema: fresh(), autoApplySchema: false });
		expect(r).toMatchObject({ status: 'Error', message: expect.stringMatching(/Connected, but: The ledger schema ".*" is not set up in this database.*Apply Schema Automatically/) });
	});

	it('rejects an unsafe schema name before connecting', async () => {
		const r = await test({ ...base, schema: 'x;drop' });
		expect(r).toMatchObject({ status: 'Error', message: expect.stringMatching(/Invalid schema name/) });
	});

	it('names a wrong password (on a role that needs one)', async () => {
		const role = `ol_pw_${Date.now()}`;
		await pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'right-password'`);
		try {
			const r = await test({ ...base, user: role, password: 'wrong-password' });
			// With trust authentication (a developer machine) any password is accepted; where the
			// server checks passwords the message must name the failure and never echo the secret.
			const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_hba_file_rules WHERE auth_method IN ('md5','scram-sha-256','password')`);
			if (rows[0].n > 0 && r.status === 'Error') {
				expect(r.message).toMatch(/Authentication failed: wrong password/);
			} else {
				expect(r.status).toBe('OK');
			}
			expect(JSON.stringify(r)).not.toContain('wrong-password');
		} finally {
			await pool.query(`DROP ROLE ${role}`);
		}
	});
});

describe('migration 0005 (issue 11) on a schema with data', () => {
	it('hashes stored lease and claim tokens in place, drops holderToken from events, and gives unknown rows a settle window', async () => {
		const schema = fresh();
		const { renderMigration: render } = await import('../../../src/db/migrate');
		const { createHash } = await import('node:crypto');
		for (const m of loadMigrations().filter((x) => x.version <= 4)) await pool.query(render(m.sql, schema));
		const lease = '11111111-2222-4333-8444-555555555555';
		const claimTok = '66666666-7777-4888-8999-aaaaaaaaaaaa';
		const s = `"${schema}"`;
		await pool.query(
			`INSERT INTO ${s}.operations (operation_key, status, fingerprint, fingerprint_alg, idempotency_key, lease_token, lease_expires_at, unknown_since, claim_token, claim_expires_at)
			 VALUES ('m:1', 'unknown', 'f', 'a', 'ik', $1, now() - interval '10 seconds', now() - interval '5 seconds', $2, now() + interval '1 minute')`,
			[lease, claimTok],
		);
		await pool.query(
			`INSERT INTO ${s}.operation_events (operation_key, event, lease_token, detail) VALUES ('m:1', 'reserved', $1, NULL), ('m:1', 'stale_confirmation', $1, jsonb_build_object('holderToken', $1::text, 'reported', 'succeeded'))`,
			[lease],
		);
		await migrate(pool, schema, true);
		const hash = (t: string) => createHash('sha256').update(Buffer.from(t.replace(/-/g, ''), 'hex')).digest();
		const { rows } = await pool.query(`SELECT * FROM ${s}.operations WHERE operation_key = 'm:1'`);
		expect(rows[0].lease_token_hash).toEqual(hash(lease));
		expect(rows[0].claim_token_hash).toEqual(hash(claimTok));
		expect(rows[0].settle_seconds).toBe(120);
		expect(rows[0].settle_until.getTime() - rows[0].unknown_since.getTime()).toBeGreaterThanOrEqual(120_000);
		const ev = await pool.query(`SELECT lease_token_hash, detail FROM ${s}.operation_events WHERE operation_key = 'm:1' ORDER BY event_id`);
		expect(ev.rows.map((r) => r.lease_token_hash)).toEqual([hash(lease), hash(lease)]);
		expect(ev.rows[1].detail).toEqual({ reported: 'succeeded' });
		const all = await pool.query(`SELECT (SELECT string_agg(row_to_json(o)::text, '') FROM ${s}.operations o) || (SELECT string_agg(row_to_json(e)::text, '') FROM ${s}.operation_events e) AS t`);
		expect(all.rows[0].t).not.toContain(lease);
		expect(all.rows[0].t).not.toContain(claimTok);
		// The old append_event(…, uuid, …) that wrote tokens is gone.
		const fns = await pool.query(`SELECT pg_get_function_identity_arguments(p.oid) AS args FROM pg_proc p WHERE p.pronamespace = $1::regnamespace AND p.proname = 'append_event'`, [schema]);
		expect(fns.rows.map((r) => r.args)).toEqual([expect.stringContaining('bytea')]);
	});
});
