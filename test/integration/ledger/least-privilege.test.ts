/**
 * The split setup (schema/security/least_privilege_role.sql, function_security.sql, migration
 * 0007): the nodes' role can do its work through the SECURITY DEFINER entry points and nothing
 * else. Every known bypass of the functions is tried as that role and must fail; TRUNCATE is refused even
 * for the owner.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { claimUnknown } from '../../../src/ledger/reconcile/claim';
import { complete, dequeue, enqueue, stats } from '../../../src/queue';
import { DATABASE_URL, randomSchema } from '../../helpers/db';

const admin = new Pool({ connectionString: DATABASE_URL, max: 2 });
const schema = randomSchema('ol_role');
const q = `"${schema}"`;
const role = `${schema}_nodes`;
const owner = `${schema}_owner`;
const dbName = new URL(DATABASE_URL).pathname.slice(1);
let asRole: Pool;

/**
 * The entry points and their audiences, read from the one list (ol_entry_points() in
 * schema/security/function_security.sql) after the migration: 'nodes' are what the nodes' role
 * gets, the rest (operator, hard_delete) are the Operation Ledger Admin's. The tests below check
 * the database's SECURITY DEFINER functions and grants against it, the nodes' work through exactly
 * these grants, and docs/security.md's list against it.
 */
let ENTRY_POINTS: string[] = [];
let ADMIN_ENTRY_POINTS: string[] = [];
/** Functions left without a SET clause so that the planner inlines them (function_security.sql, INLINED). */
const INLINED = ['ol_refused_chars', 'queue_now', 'ledger_token_hash', 'downstream_idempotency_key'];

function runRoleScript(extra: string[] = []): void {
	execFileSync(
		'psql',
		[DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-v', `role=${role}`, ...extra, '-f', 'schema/security/least_privilege_role.sql'],
		{ stdio: 'pipe' },
	);
}

beforeAll(async () => {
	await migrate(admin, ledgerSchema(schema), true);
	const { rows: list } = await admin.query<{ function_name: string; audience: string }>(`SELECT * FROM ${q}.ol_entry_points() ORDER BY 1`);
	ENTRY_POINTS = list.filter((e) => e.audience === 'nodes').map((e) => e.function_name);
	ADMIN_ENTRY_POINTS = list.filter((e) => e.audience !== 'nodes').map((e) => e.function_name);
	runRoleScript(['-v', 'password=s3cret-for-test']);
	// Idempotent: a second run (e.g. after an upgrade, without a password) succeeds and changes nothing.
	runRoleScript();
	const url = new URL(DATABASE_URL);
	url.username = role;
	url.password = 's3cret-for-test';
	asRole = new Pool({ connectionString: url.toString(), max: 2 });
	asRole.on('error', () => undefined);
});
afterAll(async () => {
	await asRole?.end();
	await admin.query(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
	for (const r of [role, owner]) {
		await admin.query(`DROP OWNED BY "${r}"`).catch(() => undefined);
		await admin.query(`DROP ROLE IF EXISTS "${r}"`);
	}
	// The script revoked TEMPORARY from PUBLIC on the shared test database: give it back.
	await admin.query(`GRANT TEMPORARY ON DATABASE "${dbName}" TO PUBLIC`);
	await admin.end();
});

describe('schema/security: functions and roles', () => {
	it('entry points are SECURITY DEFINER, owned by a NOLOGIN role; every function pins search_path with pg_temp last', async () => {
		const { rows } = await admin.query<{ proname: string; prosecdef: boolean; config: string[] | null; owner: string; canlogin: boolean }>(
			`SELECT p.proname, p.prosecdef, p.proconfig AS config, r.rolname AS owner, r.rolcanlogin AS canlogin
			   FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner WHERE p.pronamespace = $1::regnamespace ORDER BY 1`,
			[schema],
		);
		expect(rows.filter((r) => r.prosecdef).map((r) => r.proname)).toEqual([...ENTRY_POINTS, ...ADMIN_ENTRY_POINTS].sort());
		for (const r of rows) {
			expect(r.owner).toBe(owner);
			expect(r.canlogin).toBe(false);
			if (INLINED.includes(r.proname)) expect([r.config, r.prosecdef]).toEqual([null, false]);
			else expect(r.config).toContain(`search_path=${schema}, pg_temp`);
		}
		// The list is not empty and every audience is one the role scripts know.
		expect(ENTRY_POINTS.length).toBeGreaterThan(10);
		expect(ADMIN_ENTRY_POINTS.length).toBeGreaterThan(3);
		const { rows: audiences } = await admin.query<{ audience: string }>(`SELECT DISTINCT audience FROM ${q}.ol_entry_points() ORDER BY 1`);
		expect(audiences.map((r) => r.audience)).toEqual(['hard_delete', 'nodes', 'operator']);
		const { rows: exec } = await admin.query<{ proname: string }>(
			`SELECT p.proname FROM pg_proc p WHERE p.pronamespace = $1::regnamespace AND has_function_privilege($2, p.oid, 'EXECUTE') ORDER BY 1`,
			[schema, role],
		);
		expect(exec.map((r) => r.proname)).toEqual(ENTRY_POINTS);
	});

	it("docs/security.md names exactly ol_entry_points(): the nodes' list, then the operator's and Hard Delete", async () => {
		const { rows } = await admin.query<{ function_name: string; audience: string }>(`SELECT * FROM ${q}.ol_entry_points() ORDER BY 1`);
		const of = (...a: string[]) => rows.filter((r) => a.includes(r.audience)).map((r) => r.function_name).sort();
		const doc = readFileSync(join(__dirname, '../../../docs/security.md'), 'utf8').replace(/\s+/g, ' ');
		const para = /each with its audience: for the nodes (.*?); for the operator (.*?), and `(\w+)` on its own\./.exec(doc);
		expect(para).not.toBeNull();
		const names = (text: string) => [...text.matchAll(/`(\w+)`/g)].map((m) => m[1]).sort();
		expect(names(para![1])).toEqual(of('nodes'));
		expect(names(para![2])).toEqual(of('operator'));
		expect([para![3]]).toEqual(of('hard_delete'));
	});

	it('lets the nodes reserve, confirm, reconcile, enqueue, claim and complete, and check the schema version', async () => {
		await expect(migrate(asRole, ledgerSchema(schema), false)).resolves.toBeGreaterThanOrEqual(7);
		const [r] = await reserveOperations(asRole, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: 'lp:1', request: { a: 1 }, leaseSeconds: 60 })]);
		expect(r.outcome).toBe('proceed');
		const [c] = await confirmOperations(asRole, ledgerSchema(schema), [prepareConfirmItem(0, { operationKey: 'lp:1', leaseToken: r.leaseToken, outcome: 'unknown' })]);
		expect(c.result).toBe('recorded');
		// Its settle window (120 s by default) has passed.
		await admin.query(`UPDATE ${q}.operations SET settle_until = settle_until - interval '1 day'`);
		const claimed = await claimUnknown(asRole, ledgerSchema(schema), { limit: 10, settleSeconds: 0, claimSeconds: 10, target: null });
		expect(claimed.map((x) => x.operationKey)).toEqual(['lp:1']);
		await enqueue(asRole, ledgerSchema(schema), [{ queue: 'lp', group: 'high', payload: { n: 1 } }]);
		const [task] = await dequeue(asRole, ledgerSchema(schema), { queue: 'lp', limit: 1, leaseSeconds: 30 });
		expect(task).toBeDefined();
		const [done] = await complete(asRole, ledgerSchema(schema), [{ taskId: task.taskId, leaseToken: task.leaseToken }]);
		expect(done.outcome).toBe('completed');
		expect((await stats(asRole, ledgerSchema(schema), 'lp')).queue).toBe('lp');
	});

	describe('every bypass fails as the nodes\' role', () => {
		const attempts: Array<[string, string, RegExp]> = [
			['TRUNCATE the event log', `TRUNCATE ${q}.operation_events`, /permission denied/],
			['TRUNCATE the ledger', `TRUNCATE ${q}.operations`, /permission denied/],
			['DISABLE TRIGGER', `ALTER TABLE ${q}.operation_events DISABLE TRIGGER USER`, /must be owner/],
			['DISABLE TRIGGER ALL', `ALTER TABLE ${q}.operations DISABLE TRIGGER ALL`, /must be owner/],
			['UPDATE operations directly', `UPDATE ${q}.operations SET status = 'succeeded'`, /permission denied/],
			['DELETE operations', `DELETE FROM ${q}.operations`, /permission denied/],
			['UPDATE events', `UPDATE ${q}.operation_events SET event = 'x'`, /permission denied/],
			['forge an event by INSERT', `INSERT INTO ${q}.operation_events (operation_key, event) VALUES ('lp:1', 'succeeded')`, /permission denied/],
			['forge an event through the internal function', `SELECT ${q}.append_event('lp:1', 'succeeded', NULL, NULL)`, /permission denied|does not exist/],
			['read the ledger directly', `SELECT * FROM ${q}.operations`, /permission denied/],
			['write queue tasks directly', `UPDATE ${q}.queue_tasks SET status = 'done'`, /permission denied/],
			['create a temporary table', `CREATE TEMP TABLE operation_events (x int)`, /permission denied/],
			['create a table in the schema', `CREATE TABLE ${q}.intruder (x int)`, /permission denied/],
			['replace an entry point', `CREATE OR REPLACE FUNCTION ${q}.queue_next_due(text) RETURNS timestamptz LANGUAGE sql AS 'SELECT now()'`, /permission denied|must be owner/],
			['drop the ledger', `DROP TABLE ${q}.operations`, /must be owner/],
			['drop the truncate guard', `DROP TRIGGER operations_no_truncate ON ${q}.operations`, /must be owner/],
		];
		it.each(attempts)('%s', async (_what, sql, error) => {
			await expect(asRole.query(sql)).rejects.toThrow(error);
		});
	});

	it('a temporary table named operation_events never catches the functions\' writes (pg_temp is searched last)', async () => {
		// Even with TEMPORARY granted back, the pinned search_path keeps the functions on the real tables.
		await admin.query(`GRANT TEMPORARY ON DATABASE "${dbName}" TO "${role}"`);
		const c = await asRole.connect();
		try {
			await c.query('CREATE TEMP TABLE operation_events (LIKE pg_catalog.pg_class)');
			await c.query('CREATE TEMP TABLE operations (operation_key text)');
			const [r] = await reserveOperations(c, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: 'lp:shadow', request: { a: 1 }, leaseSeconds: 60 })]);
			expect(r.outcome).toBe('proceed');
			expect((await c.query('SELECT count(*)::int AS n FROM pg_temp.operation_events')).rows[0].n).toBe(0);
			expect((await c.query('SELECT count(*)::int AS n FROM pg_temp.operations')).rows[0].n).toBe(0);
		} finally {
			c.release(true);
			await admin.query(`REVOKE TEMPORARY ON DATABASE "${dbName}" FROM "${role}"`);
		}
		const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${q}.operation_events WHERE operation_key = 'lp:shadow'`);
		expect(rows[0].n).toBeGreaterThan(0);
	});

	it('TRUNCATE is refused even for the owner (migration 0007)', async () => {
		await expect(admin.query(`TRUNCATE ${q}.operation_events`)).rejects.toThrow(/TRUNCATE .* is refused/);
		await expect(admin.query(`TRUNCATE ${q}.operations CASCADE`)).rejects.toThrow(/TRUNCATE .* is refused/);
	});

	it('the role script refuses to run without a schema that exists', () => {
		expect(() =>
			execFileSync('psql', [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', 'schema=ol_no_such_schema', '-v', `role=${role}`, '-f', 'schema/security/least_privilege_role.sql'], {
				stdio: 'pipe',
			}),
		).toThrow(/does not exist/);
	});
});
