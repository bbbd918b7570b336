/**
 * schema/security/operator_role.sql: re-runnable (twice in a row, and over a role with the table
 * grants older versions of the script gave, which it removes), Hard Delete only on the explicit
 * choice, and it refuses a schema whose SECURITY DEFINER functions would run as a superuser.
 * What the role can and cannot do is test/integration/security/roles.test.ts.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { checkRetentionOptions, runRetention } from '../../../src/ledger/admin/retention';
import { getOperation } from '../../../src/ledger/admin/get';
import { DATABASE_URL, randomSchema } from '../../helpers/db';

const admin = new Pool({ connectionString: DATABASE_URL, max: 2 });
const schema = randomSchema('ol_oprole');
const role = `${schema}_operator`;
const nodes = `${schema}_nodes`;
const owner = `${schema}_owner`;
const q = `"${schema}"`;
const password = randomBytes(12).toString('hex');
let asRole: Pool;

function runScript(file: string, vars: Record<string, string>, s = schema): void {
	const args = [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${s}`];
	for (const [k, v] of Object.entries(vars)) args.push('-v', `${k}=${v}`);
	execFileSync('psql', [...args, '-f', file], { stdio: 'pipe' });
}
const operatorScript = (vars: Record<string, string> = {}, s = schema) => runScript('schema/security/operator_role.sql', { role, ...vars }, s);
async function grantsOf(r: string) {
	const { rows } = await admin.query<{ what: string }>(
		`SELECT c.relname || ':' || p.privilege_type AS what
		   FROM pg_class c CROSS JOIN LATERAL (SELECT privilege_type FROM aclexplode(c.relacl) a JOIN pg_roles g ON g.oid = a.grantee WHERE g.rolname = $2) p
		  WHERE c.relnamespace = $1::regnamespace
		 UNION ALL
		 SELECT pr.proname || ':EXECUTE' FROM pg_proc pr WHERE pr.pronamespace = $1::regnamespace AND has_function_privilege($2, pr.oid, 'EXECUTE')
		 ORDER BY 1`,
		[schema, r],
	);
	return rows.map((x) => x.what);
}
const EXPECTED = [
	'function_set:SELECT',
	'ol_schema_migrations:SELECT',
	'ops_compact_batch:EXECUTE',
	'ops_get_operation:EXECUTE',
	'ops_health:EXECUTE',
	'ops_list_operations:EXECUTE',
	'ops_settle_by_hand:EXECUTE',
];

beforeAll(async () => {
	await migrate(admin, ledgerSchema(schema), true);
	runScript('schema/security/least_privilege_role.sql', { role: nodes, password, keep_public_temp: '1' });
	const url = new URL(DATABASE_URL);
	url.username = role;
	url.password = password;
	asRole = new Pool({ connectionString: url.toString(), max: 2 });
});
afterAll(async () => {
	await asRole?.end();
	await admin.query(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
	for (const r of [role, nodes, owner]) {
		await admin.query(`DROP OWNED BY "${r}"`).catch(() => undefined);
		await admin.query(`DROP ROLE IF EXISTS "${r}"`);
	}
	await admin.end();
});

describe('schema/security/operator_role.sql', () => {
	it('runs twice (the second time without a password) and leaves exactly the operator entry points and the version tables', async () => {
		operatorScript({ password });
		operatorScript();
		expect(await grantsOf(role)).toEqual(EXPECTED);
		await expect(migrate(asRole, ledgerSchema(schema), false)).resolves.toBeGreaterThanOrEqual(12);
	});

	it('removes the table grants an older version of the script gave (UPDATE, INSERT, DELETE, sequences)', async () => {
		// What operator_role.sql granted before the operator could only call functions.
		await admin.query(`GRANT SELECT ON ${q}.operations, ${q}.operation_events TO "${role}"`);
		await admin.query(`GRANT UPDATE (status, retryable, settled_by) ON ${q}.operations TO "${role}"`);
		await admin.query(`GRANT INSERT, DELETE ON ${q}.operation_events TO "${role}"`);
		await admin.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${q} TO "${role}"`);
		await admin.query(`GRANT EXECUTE ON FUNCTION ${q}.append_event(text, text, text, text, integer, bytea, jsonb, integer, jsonb), ${q}.ledger_now() TO "${role}"`);
		expect(await grantsOf(role)).toEqual(expect.arrayContaining(['operation_events:DELETE', 'append_event:EXECUTE']));
		await expect(asRole.query(`UPDATE ${q}.operations SET status = 'failed', retryable = true WHERE false`)).resolves.toBeDefined();
		operatorScript();
		expect(await grantsOf(role)).toEqual(EXPECTED);
		await expect(asRole.query(`UPDATE ${q}.operations SET status = 'failed', retryable = true WHERE false`)).rejects.toThrow(/permission denied/);
		const { rows } = await admin.query(`SELECT has_column_privilege($1, '${q}.operations', 'status', 'UPDATE') AS col`, [role]);
		expect(rows[0].col).toBe(false);
	});

	it('grants Hard Delete only with -v hard_delete=1, and a run without it takes it away again', async () => {
		const [r] = await reserveOperations(admin, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: 'hd:1', request: {}, leaseSeconds: 60 })]);
		await confirmOperations(admin, ledgerSchema(schema), [prepareConfirmItem(0, { operationKey: 'hd:1', leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: 'x' })]);
		await admin.query(`UPDATE ${q}.operations SET settled_at = now() - interval '40 days' WHERE operation_key = 'hd:1'`);
		const hardDelete = () => runRetention(asRole, ledgerSchema(schema), checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 30, acknowledge: true }));
		await expect(hardDelete()).rejects.toThrow(/permission denied for function ops_hard_delete_batch/);
		operatorScript({ hard_delete: '1' });
		expect(await grantsOf(role)).toEqual([...EXPECTED, 'ops_hard_delete_batch:EXECUTE'].sort());
		await expect(hardDelete()).resolves.toMatchObject({ operations: 1 });
		expect(await getOperation(asRole, ledgerSchema(schema), 'hd:1')).toBeNull();
		operatorScript();
		expect(await grantsOf(role)).toEqual(EXPECTED);
	});

	it('refuses a schema owned by a superuser (its SECURITY DEFINER functions would run as one), and says what to run first', async () => {
		const other = randomSchema('ol_oprole_su');
		await migrate(admin, ledgerSchema(other), true);
		try {
			expect(() => operatorScript({}, other)).toThrow(/owned by the superuser .*least_privilege_role\.sql first/s);
		} finally {
			await admin.query(`DROP SCHEMA IF EXISTS "${other}" CASCADE`);
		}
		expect(() => operatorScript({}, 'ol_no_such_schema')).toThrow(/does not exist/);
	});
});
