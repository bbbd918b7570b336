import { execFileSync } from 'node:child_process';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { claimUnknown } from '../../../src/ledger/reconcile';
import { DATABASE_URL, randomSchema } from '../../helpers/db';

const admin = new Pool({ connectionString: DATABASE_URL, max: 2 });
const schema = randomSchema('ol_role');
const role = `${schema}_nodes`;
let asRole: Pool;

beforeAll(async () => {
	await migrate(admin, schema, true);
	execFileSync(
		'psql',
		[DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-v', `role=${role}`, '-v', 'password=s3cret-for-test', '-f', 'schema/security/least_privilege_role.sql'],
		{ stdio: 'pipe' },
	);
	const url = new URL(DATABASE_URL);
	url.username = role;
	url.password = 's3cret-for-test';
	asRole = new Pool({ connectionString: url.toString(), max: 2 });
});
afterAll(async () => {
	await asRole?.end();
	await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
	await admin.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
	await admin.query(`DROP ROLE IF EXISTS "${role}"`);
	await admin.end();
});

describe('schema/security/least_privilege_role.sql', () => {
	it('lets the nodes reserve, confirm and reconcile, and check the schema version', async () => {
		const q = `"${schema}"`;
		await expect(migrate(asRole, schema, false)).resolves.toBeGreaterThanOrEqual(3);
		const [r] = await reserveOperations(asRole, q, [prepareReserveItem(0, { operationKey: 'lp:1', request: { a: 1 }, leaseSeconds: 60 })]);
		expect(r.outcome).toBe('proceed');
		const [c] = await confirmOperations(asRole, q, [prepareConfirmItem(0, { operationKey: 'lp:1', leaseToken: r.leaseToken, outcome: 'unknown' })]);
		expect(c.result).toBe('recorded');
		// Its settle window (120 s by default) has passed.
		await admin.query(`UPDATE ${q}.operations SET settle_until = settle_until - interval '1 day'`);
		const claimed = await claimUnknown(asRole, q, { limit: 10, settleSeconds: 0, claimSeconds: 10, target: null });
		expect(claimed.map((x) => x.operationKey)).toEqual(['lp:1']);
		const { rows } = await asRole.query(`SELECT has_table_privilege($1, 'INSERT') AS ins FROM (VALUES (1)) v`, [`${q}.queue_tasks`]);
		expect(rows[0].ins).toBe(true);
	});

	it('cannot delete ledger rows, rewrite events, or change the structure', async () => {
		const q = `"${schema}"`;
		await expect(asRole.query(`DELETE FROM ${q}.operations`)).rejects.toThrow(/permission denied/);
		await expect(asRole.query(`TRUNCATE ${q}.operation_events`)).rejects.toThrow(/permission denied/);
		await expect(asRole.query(`UPDATE ${q}.operation_events SET event = 'x'`)).rejects.toThrow(/permission denied/);
		await expect(asRole.query(`CREATE TABLE ${q}.intruder (x int)`)).rejects.toThrow(/permission denied/);
		await expect(asRole.query(`DROP TABLE ${q}.operations`)).rejects.toThrow(/must be owner/);
		await expect(asRole.query(`CREATE TABLE public.intruder_${Date.now()} (x int)`)).rejects.toThrow(/permission denied/);
	});
});
