import { execFileSync } from 'node:child_process';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { checkListOptions, checkRetentionOptions, getOperation, ledgerHealth, listOperations, prepareSettleItem, runRetention, settleByHand } from '../../../src/ledger/admin';
import { DATABASE_URL, randomSchema } from '../../helpers/db';

const admin = new Pool({ connectionString: DATABASE_URL, max: 2 });
const schema = randomSchema('ol_oprole');
const role = `${schema}_operator`;
const q = `"${schema}"`;
let asRole: Pool;

beforeAll(async () => {
	await migrate(admin, schema, true);
	execFileSync(
		'psql',
		[DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-v', `role=${role}`, '-v', 'password=op-s3cret-for-test', '-f', 'schema/security/operator_role.sql'],
		{ stdio: 'pipe' },
	);
	const url = new URL(DATABASE_URL);
	url.username = role;
	url.password = 'op-s3cret-for-test';
	asRole = new Pool({ connectionString: url.toString(), max: 2 });
});
afterAll(async () => {
	await asRole?.end();
	await admin.query(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
	await admin.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
	await admin.query(`DROP ROLE IF EXISTS "${role}"`);
	await admin.end();
});

async function makeUnknown(key: string) {
	const [r] = await reserveOperations(admin, q, [prepareReserveItem(0, { operationKey: key, request: { key }, leaseSeconds: 60 })]);
	await confirmOperations(admin, q, [prepareConfirmItem(0, { operationKey: key, leaseToken: r.leaseToken, outcome: 'unknown' })]);
}

describe('schema/security/operator_role.sql', () => {
	it('lets an operator get, list, read health, settle by hand and compact', async () => {
		await expect(migrate(asRole, schema, false)).resolves.toBeGreaterThanOrEqual(8);
		await makeUnknown('op:1');
		expect((await listOperations(asRole, q, checkListOptions({ kind: 'unknown' }))).total).toBe(1);
		expect((await getOperation(asRole, q, 'op:1'))?.operation.status).toBe('unknown');
		expect((await ledgerHealth(asRole, q, 1)).byStatus.unknown).toBe(1);
		const [s] = await settleByHand(asRole, q, [prepareSettleItem(0, { operationKey: 'op:1', decision: 'happened', externalRef: 'pay', reason: 'seen', decidedBy: 'ops' })]);
		expect(s.result).toBe('settled');
		await admin.query(`UPDATE ${q}.operations SET settled_at = now() - interval '40 days'`);
		const report = await runRetention(asRole, q, checkRetentionOptions({ mode: 'compact', olderThanDays: 30 }));
		expect(report.operations).toBe(1);
	});

	it('cannot reserve, rewrite rows outside its columns, or hard delete', async () => {
		await expect(
			reserveOperations(asRole, q, [prepareReserveItem(0, { operationKey: 'op:2', request: {}, leaseSeconds: 60 })]),
		).rejects.toThrow(/permission denied/);
		await expect(asRole.query(`UPDATE ${q}.operations SET fingerprint = 'x'`)).rejects.toThrow(/permission denied/);
		await expect(asRole.query(`DELETE FROM ${q}.operations`)).rejects.toThrow(/permission denied/);
		await expect(
			runRetention(asRole, q, checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 30, acknowledge: true })),
		).rejects.toThrow(/permission denied/);
		expect(Number((await admin.query(`SELECT count(*) FROM ${q}.operations`)).rows[0].count)).toBe(1);
	});
});
