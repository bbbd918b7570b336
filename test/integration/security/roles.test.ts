/**
 * Only the functions change the ledger and the queue, for every role (docs/security.md).
 * The split setup as a DBA makes it: the schema applied, least_privilege_role.sql (a NOLOGIN owner
 * and the nodes' role), operator_role.sql (the operator role). Then, as the operator role AND as
 * the nodes' role, every direct write of the issue is tried and must be refused, and the
 * legitimate paths (the Admin node's operations, the nodes' ledger and queue operations) must work.
 * Retention's delete guard is tried by a role that was granted DELETE outright: no setting and no
 * function of its own gets a DELETE of an event (or an operation) past the trigger.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Pool, type PoolClient } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { claimUnknown } from '../../../src/ledger/reconcile/claim';
import { prepareResolveItem, resolveUnknown } from '../../../src/ledger/reconcile/resolve';
import { checkListOptions, listOperations } from '../../../src/ledger/admin/list';
import { checkRetentionOptions, runRetention } from '../../../src/ledger/admin/retention';
import { getOperation } from '../../../src/ledger/admin/get';
import { ledgerHealth } from '../../../src/ledger/admin/health';
import { prepareSettleItem, settleByHand } from '../../../src/ledger/admin/settle';
import { complete, dequeue, enqueue, fail, listDead, purge, release, requeueDead, stats } from '../../../src/queue';
import { DATABASE_URL, randomSchema, setLedgerClock } from '../../helpers/db';

jest.setTimeout(60_000);

const admin = new Pool({ connectionString: DATABASE_URL, max: 3 });
const schema = randomSchema('ol_roles');
const q = `"${schema}"`;
const nodesRole = `${schema}_nodes`;
const operatorRole = `${schema}_operator`;
const intruder = `${schema}_intruder`;
const owner = `${schema}_owner`;
const password = randomBytes(12).toString('hex');

function psql(file: string, vars: Record<string, string>): void {
	const args = [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1'];
	for (const [k, v] of Object.entries(vars)) args.push('-v', `${k}=${v}`);
	execFileSync('psql', [...args, '-f', file], { stdio: 'pipe' });
}
function poolAs(role: string): Pool {
	const url = new URL(DATABASE_URL);
	url.username = role;
	url.password = password;
	const p = new Pool({ connectionString: url.toString(), max: 2 });
	p.on('error', () => undefined);
	return p;
}

let asNodes: Pool;
let asOperator: Pool;
beforeAll(async () => {
	await migrate(admin, ledgerSchema(schema), true);
	// keep_public_temp: other suites share this database.
	psql('schema/security/least_privilege_role.sql', { schema, role: nodesRole, password, keep_public_temp: '1' });
	psql('schema/security/operator_role.sql', { schema, role: operatorRole, password });
	asNodes = poolAs(nodesRole);
	asOperator = poolAs(operatorRole);
});
afterAll(async () => {
	await asNodes?.end();
	await asOperator?.end();
	await admin.query(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
	for (const r of [nodesRole, operatorRole, intruder, owner]) {
		await admin.query(`DROP OWNED BY "${r}"`).catch(() => undefined);
		await admin.query(`DROP ROLE IF EXISTS "${r}"`);
	}
	await admin.end();
});

const fp = (n: number) => ({ n });
/** A succeeded operation (pay_123), a live reservation, an unknown one, as the nodes make them. */
async function seed(tag: string) {
	const keys = { done: `pay_123:${tag}`, live: `live:${tag}`, unknown: `unknown:${tag}` };
	const rs = await reserveOperations(asNodes, ledgerSchema(schema), [
		prepareReserveItem(0, { operationKey: keys.done, request: fp(1), leaseSeconds: 60 }),
		prepareReserveItem(1, { operationKey: keys.live, request: fp(2), leaseSeconds: 600 }),
		prepareReserveItem(2, { operationKey: keys.unknown, request: fp(3), leaseSeconds: 60, target: `t-${tag}` }),
	]);
	await confirmOperations(asNodes, ledgerSchema(schema), [
		prepareConfirmItem(0, { operationKey: keys.done, leaseToken: rs[0].leaseToken, outcome: 'succeeded', externalRef: 'ch_123' }),
		prepareConfirmItem(1, { operationKey: keys.unknown, leaseToken: rs[2].leaseToken, outcome: 'unknown', reason: 'timeout' }),
	]);
	return keys;
}
const rowOf = async (key: string) => (await admin.query(`SELECT * FROM ${q}.operations WHERE operation_key = $1`, [key])).rows[0];
const eventsOf = async (key: string) => Number((await admin.query(`SELECT count(*) FROM ${q}.operation_events WHERE operation_key = $1`, [key])).rows[0].count);

/** Runs statements on one connection (a set_config then a DELETE must share the transaction). */
async function onOne(pool: Pool, statements: string[]): Promise<void> {
	const c: PoolClient = await pool.connect();
	try {
		await c.query('BEGIN');
		for (const sql of statements) await c.query(sql);
		await c.query('COMMIT');
	} finally {
		await c.query('ROLLBACK').catch(() => undefined);
		c.release();
	}
}

describe.each([
	['the operator role', () => asOperator],
	["the nodes' role", () => asNodes],
])('as %s, every direct write is refused', (_who, pool) => {
	let keys: Awaited<ReturnType<typeof seed>>;
	let taskId: string;
	beforeAll(async () => {
		keys = await seed(randomBytes(3).toString('hex'));
		const [t] = await enqueue(asNodes, ledgerSchema(schema), [{ queue: 'roles', group: 'normal', payload: { n: 1 }, dedupeKey: `d-${randomBytes(3).toString('hex')}` }]);
		taskId = t.taskId;
	});

	const attempts: Array<[string, (k: { done: string; live: string; unknown: string }, id: string) => string[]]> = [
		// Item 2 of the issue, one by one.
		['UPDATE operations SET status = failed, retryable = true on a succeeded operation', (k) => [
			`UPDATE ${q}.operations SET status = 'failed', retryable = true WHERE operation_key = '${k.done}'`,
		]],
		['UPDATE a reserved operation with a live lease (a second holder)', (k) => [
			`UPDATE ${q}.operations SET lease_expires_at = now() - interval '1 hour' WHERE operation_key = '${k.live}'`,
		]],
		['INSERT a forged "settled_by_hand" event by "the CFO"', (k) => [
			`INSERT INTO ${q}.operation_events (operation_key, event, from_status, to_status, detail)
			 VALUES ('${k.unknown}', 'settled_by_hand', 'unknown', 'succeeded', '{"decidedBy": "the CFO"}')`,
		]],
		["set_config('n8n_operation_ledger.retention', 'on', true) then DELETE the events", (k) => [
			`SELECT set_config('n8n_operation_ledger.retention', 'on', true)`,
			`DELETE FROM ${q}.operation_events WHERE operation_key = '${k.done}'`,
		]],
		['DELETE an operation', (k) => [`DELETE FROM ${q}.operations WHERE operation_key = '${k.done}'`]],
		['UPDATE an event', (k) => [`UPDATE ${q}.operation_events SET event = 'x' WHERE operation_key = '${k.done}'`]],
		['write an event through the internal append_event', (k) => [
			`SELECT ${q}.append_event('${k.unknown}', 'settled_by_hand', 'unknown', 'succeeded', 1, NULL, '{}', 0, '{"decidedBy": "the CFO"}')`,
		]],
		['expire a live lease through the internal ledger_expire_lease', (k) => [`SELECT ${q}.ledger_expire_lease('${k.live}', now() + interval '1 day', '{}', NULL)`]],
		// The queue's tables.
		['UPDATE queue_tasks (a task to dead)', (_k, id) => [`UPDATE ${q}.queue_tasks SET status = 'dead', dead_at = now() WHERE id = ${id}`]],
		['INSERT into queue_tasks', () => [`INSERT INTO ${q}.queue_tasks (queue, priority_group, status) VALUES ('roles', 'high', 'pending')`]],
		['DELETE from queue_tasks', (_k, id) => [`DELETE FROM ${q}.queue_tasks WHERE id = ${id}`]],
		['DELETE from queue_tasks_archive', () => [`DELETE FROM ${q}.queue_tasks_archive`]],
		['UPDATE queue_group_tags (jump the queue)', () => [`UPDATE ${q}.queue_group_tags SET last_tag = 0`]],
		['UPDATE queue_group_weights', () => [`UPDATE ${q}.queue_group_weights SET weight = 1000`]],
		['sweep leases through the internal queue_expire_leases', () => [`SELECT ${q}.queue_expire_leases('roles', 1000, now() + interval '1 day')`]],
		['read the ledger directly', () => [`SELECT * FROM ${q}.operations`]],
		['read the event log directly', () => [`SELECT * FROM ${q}.operation_events`]],
		['read the queue directly', () => [`SELECT * FROM ${q}.queue_tasks`]],
		['TRUNCATE the queue', () => [`TRUNCATE ${q}.queue_tasks`]],
		['disable the append-only trigger', () => [`ALTER TABLE ${q}.operation_events DISABLE TRIGGER USER`]],
		['replace the ledger clock', () => [`CREATE OR REPLACE FUNCTION ${q}.ledger_now() RETURNS timestamptz LANGUAGE sql AS 'SELECT now() + interval ''1 year'''`]],
	];
	it.each(attempts)('%s', async (_what, sqlFor) => {
		await expect(onOne(pool(), sqlFor(keys, taskId))).rejects.toThrow(/permission denied|must be owner/);
	});

	it('and the ledger and the queue are as the functions left them', async () => {
		expect(await rowOf(keys.done)).toMatchObject({ status: 'succeeded', external_ref: 'ch_123', retryable: null });
		expect(await rowOf(keys.live)).toMatchObject({ status: 'reserved' });
		expect((await rowOf(keys.unknown)).status).toBe('unknown');
		expect(await eventsOf(keys.done)).toBe(2);
		const [again] = await reserveOperations(asNodes, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: keys.done, request: fp(1), leaseSeconds: 60 })]);
		expect(again).toMatchObject({ outcome: 'already_succeeded', attempt: 1, externalRef: 'ch_123' });
		const { rows } = await admin.query(`SELECT status FROM ${q}.queue_tasks WHERE id = $1`, [taskId]);
		expect(rows[0].status).toBe('pending');
	});
});

describe('the legitimate paths work as those roles', () => {
	it("the operator: Get, List, Health, Settle by Hand (recorded with its database role) and Compact; not Reserve, not the nodes' queue", async () => {
		const keys = await seed('op');
		await expect(migrate(asOperator, ledgerSchema(schema), false)).resolves.toBeGreaterThanOrEqual(12);
		expect((await getOperation(asOperator, ledgerSchema(schema), keys.done))?.operation.status).toBe('succeeded');
		expect((await listOperations(asOperator, ledgerSchema(schema), checkListOptions({ kind: 'unknown' }))).total).toBeGreaterThanOrEqual(1);
		expect((await ledgerHealth(asOperator, ledgerSchema(schema), 1)).byStatus.succeeded).toBeGreaterThanOrEqual(1);
		const [s] = await settleByHand(asOperator, ledgerSchema(schema), [prepareSettleItem(0, { operationKey: keys.unknown, decision: 'happened', externalRef: 'ch_9', reason: 'seen', decidedBy: 'the CFO' })]);
		expect(s.result).toBe('settled');
		const ev = (await getOperation(asOperator, ledgerSchema(schema), keys.unknown))!.events.find((e) => e.event === 'settled_by_hand');
		// "the CFO" is what the caller says; the database records who it is.
		expect(ev).toMatchObject({ dbRole: operatorRole, detail: { decidedBy: 'the CFO' } });
		await admin.query(`UPDATE ${q}.operations SET settled_at = now() - interval '40 days' WHERE operation_key = $1`, [keys.done]);
		await admin.query(`ALTER TABLE ${q}.operation_events DISABLE TRIGGER USER`);
		await admin.query(`UPDATE ${q}.operation_events SET created_at = created_at - interval '40 days' WHERE operation_key = $1`, [keys.done]);
		await admin.query(`ALTER TABLE ${q}.operation_events ENABLE TRIGGER USER`);
		const report = await runRetention(asOperator, ledgerSchema(schema), checkRetentionOptions({ mode: 'compact', olderThanDays: 30 }));
		expect(report).toMatchObject({ operations: 1, eventsDeleted: 2 });
		await expect(runRetention(asOperator, ledgerSchema(schema), checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 30, acknowledge: true }))).rejects.toThrow(/permission denied for function ops_hard_delete_batch/);
		await expect(reserveOperations(asOperator, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: 'op:x', request: {}, leaseSeconds: 60 })])).rejects.toThrow(/permission denied/);
		await expect(enqueue(asOperator, ledgerSchema(schema), [{ queue: 'roles', group: 'high', payload: {} }])).rejects.toThrow(/permission denied/);
	});

	it("the nodes: reserve, confirm, reconcile, and every queue operation; not the Admin node's functions", async () => {
		const keys = await seed('nodes');
		await setLedgerClock(admin, schema, 600);
		try {
			const [c] = await claimUnknown(asNodes, ledgerSchema(schema), { limit: 10, settleSeconds: 0, claimSeconds: 60, target: 't-nodes' });
			expect(c.operationKey).toBe(keys.unknown);
			const [r] = await resolveUnknown(asNodes, ledgerSchema(schema), [prepareResolveItem(0, { operationKey: keys.unknown, claimToken: c.claimToken, resolution: 'not_happened' })], {
				maxChecks: 3,
				backoffBaseSeconds: 1,
				backoffMaxSeconds: 1,
			});
			expect(r.result).toBe('failed');
		} finally {
			await setLedgerClock(admin, schema, 0);
		}
		const queue = 'roles-nodes';
		await enqueue(asNodes, ledgerSchema(schema), [1, 2, 3].map((n) => ({ queue, group: 'high', payload: { n }, maxAttempts: 1 })));
		const tasks = await dequeue(asNodes, ledgerSchema(schema), { queue, limit: 3, leaseSeconds: 30 });
		expect(tasks).toHaveLength(3);
		expect((await complete(asNodes, ledgerSchema(schema), [{ taskId: tasks[0].taskId, leaseToken: tasks[0].leaseToken }]))[0].outcome).toBe('completed');
		expect((await fail(asNodes, ledgerSchema(schema), [{ taskId: tasks[1].taskId, leaseToken: tasks[1].leaseToken, error: 'x' }]))[0].outcome).toBe('dead');
		expect((await release(asNodes, ledgerSchema(schema), [{ taskId: tasks[2].taskId, leaseToken: tasks[2].leaseToken }]))[0].outcome).toBe('released');
		expect((await listDead(asNodes, ledgerSchema(schema), queue, 10)).map((t) => t.taskId)).toEqual([tasks[1].taskId]);
		expect((await requeueDead(asNodes, ledgerSchema(schema), { queue, taskIds: [tasks[1].taskId] }))[0].outcome).toBe('requeued');
		expect((await stats(asNodes, ledgerSchema(schema), queue)).queue).toBe(queue);
		await expect(purge(asNodes, ledgerSchema(schema), { queue, deadAfterSeconds: 0, archiveAfterSeconds: null })).resolves.toMatchObject({ deadArchived: 0 });
		await expect(
			settleByHand(asNodes, ledgerSchema(schema), [prepareSettleItem(0, { operationKey: keys.live, decision: 'happened', externalRef: 'x', reason: 'x', decidedBy: 'x' })]),
		).rejects.toThrow(/permission denied for function ops_settle_by_hand/);
		await expect(getOperation(asNodes, ledgerSchema(schema), keys.done)).rejects.toThrow(/permission denied/);
	});
});

describe('retention: a check no caller can satisfy', () => {
	beforeAll(async () => {
		// A role given every table right on the event log and the ledger, and a schema of its own:
		// what an old operator role had, and more.
		await admin.query(`CREATE ROLE "${intruder}" LOGIN PASSWORD '${password}'`);
		await admin.query(`GRANT USAGE ON SCHEMA ${q} TO "${intruder}"`);
		await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${q}.operation_events, ${q}.operations TO "${intruder}"`);
		await admin.query(`CREATE SCHEMA "${intruder}" AUTHORIZATION "${intruder}"`);
	});

	it('set_config + DELETE of events, even with the DELETE privilege: refused by the trigger', async () => {
		const keys = await seed('intr');
		const p = poolAs(intruder);
		try {
			await expect(
				onOne(p, [`SELECT set_config('n8n_operation_ledger.retention', 'on', true)`, `DELETE FROM ${q}.operation_events WHERE operation_key = '${keys.done}'`]),
			).rejects.toThrow(/operation_events is append-only \(DELETE refused\)/);
			await expect(
				onOne(p, [`SET LOCAL n8n_operation_ledger.retention = 'on'`, `DELETE FROM ${q}.operations WHERE operation_key = '${keys.done}'`]),
			).rejects.toThrow(/DELETE of .*operations is refused/);
			// Its own SECURITY DEFINER function runs as itself, not as the owner: refused too.
			await onOne(p, [
				`CREATE FUNCTION "${intruder}".wipe(k text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER AS $$
				 DECLARE n bigint; BEGIN PERFORM set_config('n8n_operation_ledger.retention', 'on', true);
				 DELETE FROM ${q}.operation_events WHERE operation_key = k; GET DIAGNOSTICS n = ROW_COUNT; RETURN n; END $$`,
			]);
			await expect(onOne(p, [`SELECT "${intruder}".wipe('${keys.done}')`])).rejects.toThrow(/append-only/);
			// Nor through an entry point: current_user inside them is the owner, but no argument of theirs deletes.
			expect(await eventsOf(keys.done)).toBe(2);
		} finally {
			await p.end();
		}
	});

	it('the owner\'s retention function passes it (compaction removes old events of settled operations)', async () => {
		const { rows } = await admin.query(`SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = '${q}.operation_events'::regclass`);
		expect(rows[0].owner).toBe(owner);
		const { rows: f } = await admin.query(`SELECT pg_get_userbyid(proowner) AS owner, prosecdef FROM pg_proc WHERE oid = '${q}.ops_compact_batch(integer, integer, jsonb)'::regprocedure`);
		expect(f[0]).toEqual({ owner, prosecdef: true });
	});
});
