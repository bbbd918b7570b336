import { ledgerSchema } from '../../../src/db/identifiers';
import { execFileSync } from 'node:child_process';
import { Client, Pool, type PoolClient } from 'pg';
import { currentVersion, loadFunctionSet, loadMigrations, migrate, MigrationLockTimeoutError, readSchemaState, renderMigration, requiredVersion, SchemaNotReadyError } from '../../../src/db/migrate';
import { reserveOperations } from '../../../src/ledger/reserve';
import { cancel, complete, dequeue, enqueue, extendLease, pause, resume, settleById, stats } from '../../../src/queue';
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

/** psql applying schema/apply.sql to `schema` in one transaction, as a DBA would. */
const applyWithPsql = (schema: string) =>
	execFileSync('psql', [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-f', 'schema/apply.sql'], { stdio: 'pipe' });

/** The version of the migration just before the one named `name` (its file name without the number). */
function versionBefore(name: string): number {
	const mine = loadMigrations().find((m) => m.name === name);
	if (!mine) throw new Error(`no migration named ${name}`);
	return (loadMigrations().filter((m) => m.version < mine.version).at(-1) as { version: number }).version;
}

/** The id (as text) of the one row an INSERT ... RETURNING id made. */
const insertedId = async (c: PoolClient, sql: string) => String((await c.query(sql)).rows[0].id);

/**
 * A fresh schema at `version`: migrations 1 to `version` as they shipped (migrations never change),
 * then `seed` in the same transaction with search_path set to the schema, to leave rows as that
 * version would have. Checks the schema reads as `version`. Returns the schema and what `seed`
 * returned; nothing is kept when `seed` throws.
 */
async function schemaAt<T>(version: number, seed: (c: PoolClient) => Promise<T>): Promise<{ schema: string; seeded: T }> {
	const schema = fresh();
	const c = await pool.connect();
	let seeded: T;
	try {
		await c.query('BEGIN');
		for (const m of loadMigrations().filter((x) => x.version <= version)) await c.query(renderMigration(m.sql, ledgerSchema(schema)));
		await c.query(`SET LOCAL search_path TO "${schema}"`);
		seeded = await seed(c);
		await c.query('COMMIT');
	} catch (e) {
		await c.query('ROLLBACK');
		throw e;
	} finally {
		c.release();
	}
	expect((await readSchemaState(pool, ledgerSchema(schema))).version).toBe(version);
	return { schema, seeded };
}

/** Upgrades `schema` to this package by the migrator or by apply.sql with psql; checks that it records this version and function set. */
async function upgrade(schema: string, via: 'migrator' | 'psql'): Promise<void> {
	if (via === 'migrator') await expect(migrate(pool, ledgerSchema(schema), true)).resolves.toBe(requiredVersion());
	else applyWithPsql(schema);
	expect(await readSchemaState(pool, ledgerSchema(schema))).toEqual({ version: requiredVersion(), functions: { packageVersion: loadFunctionSet().packageVersion, hash: loadFunctionSet().hash } });
}

describe('migrations', () => {
	it('applies every migration once even when 6 workers start at the same moment', async () => {
		const schema = fresh();
		const versions = await Promise.all(Array.from({ length: 6 }, () => migrate(pool, ledgerSchema(schema), true)));
		expect(new Set(versions)).toEqual(new Set([requiredVersion()]));
		const { rows } = await pool.query(`SELECT version, name FROM "${schema}".ol_schema_migrations ORDER BY version`);
		expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
	});

	it('refuses to apply when auto-apply is off, with a message that says what to do', async () => {
		const schema = fresh();
		await expect(migrate(pool, ledgerSchema(schema), false)).rejects.toBeInstanceOf(SchemaNotReadyError);
		await expect(migrate(pool, ledgerSchema(schema), false)).rejects.toThrow(/Apply schema\/apply\.sql with psql/);
		expect(await currentVersion(pool, ledgerSchema(schema))).toBe(0);
	});

	it('schema/apply.sql applies with psql as a DBA would (twice: the second run is an upgrade that changes nothing), and the nodes accept it', async () => {
		const schema = fresh();
		for (let run = 0; run < 2; run++) {
			applyWithPsql(schema);
		}
		const state = await readSchemaState(pool, ledgerSchema(schema));
		expect(state).toEqual({ version: requiredVersion(), functions: { packageVersion: loadFunctionSet().packageVersion, hash: loadFunctionSet().hash } });
		await expect(migrate(pool, ledgerSchema(schema), false)).resolves.toBe(requiredVersion());
		const { rows } = await pool.query(`SELECT version FROM "${schema}".ol_schema_migrations ORDER BY version`);
		expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
	});

	it('re-applies the function set when it differs from this package\'s, and records it', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		// A function changed by hand and a stale record, as after an older package of the same version.
		await pool.query(`CREATE OR REPLACE FUNCTION "${schema}".downstream_idempotency_key(p_key text, p_attempt integer) RETURNS text LANGUAGE sql AS $$ SELECT 'tampered' $$`);
		await pool.query(`UPDATE "${schema}".function_set SET functions_hash = 'old'`);
		await expect(migrate(pool, ledgerSchema(schema), false)).rejects.toThrow(/differ from this package/);
		await migrate(pool, ledgerSchema(schema), true);
		const { rows } = await pool.query(`SELECT "${schema}".downstream_idempotency_key('k', 1) AS k`);
		expect(rows[0].k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect((await readSchemaState(pool, ledgerSchema(schema))).functions?.hash).toBe(loadFunctionSet().hash);
	});

	it('upgrades a schema made before the function set was recorded (migrations 1 to 3 only)', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		await pool.query(`DROP TABLE "${schema}".function_set; DELETE FROM "${schema}".ol_schema_migrations WHERE version >= 4`);
		expect(await readSchemaState(pool, ledgerSchema(schema))).toEqual({ version: 3, functions: null });
		await expect(migrate(pool, ledgerSchema(schema), true)).resolves.toBe(requiredVersion());
		expect((await readSchemaState(pool, ledgerSchema(schema))).functions?.hash).toBe(loadFunctionSet().hash);
	});

	it('never replaces the functions of a newer package version, with auto-apply on or off', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		await pool.query(`UPDATE "${schema}".function_set SET package_version = '99.0.0', functions_hash = 'newer'`);
		for (const auto of [true, false]) {
			await expect(migrate(pool, ledgerSchema(schema), auto)).rejects.toThrow(/newer than this package/);
		}
		expect((await readSchemaState(pool, ledgerSchema(schema))).functions).toEqual({ packageVersion: '99.0.0', hash: 'newer' });
		// psql's apply.sql refuses too, and changes nothing.
		expect(() =>
			applyWithPsql(schema),
		).toThrow(/a newer n8n-nodes-operation-ledger installed its functions/);
		expect((await readSchemaState(pool, ledgerSchema(schema))).functions).toEqual({ packageVersion: '99.0.0', hash: 'newer' });
	});

	it('refuses a schema newer than this package, clearly, with auto-apply on or off (migrator and apply.sql)', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		const newer = requiredVersion() + 1;
		await pool.query(`INSERT INTO "${schema}".ol_schema_migrations (version, name) VALUES ($1, 'from_the_future')`, [newer]);
		for (const auto of [true, false]) {
			const err = await migrate(pool, ledgerSchema(schema), auto).catch((e: Error) => e);
			expect(err).toBeInstanceOf(SchemaNotReadyError);
			expect((err as Error).message).toMatch(new RegExp(`is at version ${newer}, newer than this package supports \\(${requiredVersion()}`));
		}
		expect(() =>
			applyWithPsql(schema),
		).toThrow(/newer version than this package supports/);
	});

	it("never takes another tool's schema_migrations for ours, and leaves it untouched", async () => {
		const schema = fresh();
		await pool.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".schema_migrations (version text PRIMARY KEY); INSERT INTO "${schema}".schema_migrations VALUES ('20240101120000')`);
		expect(await readSchemaState(pool, ledgerSchema(schema))).toEqual({ version: 0, functions: null });
		// Same columns as ours but not our rows: still not ours.
		const other = fresh();
		await pool.query(`CREATE SCHEMA "${other}"; CREATE TABLE "${other}".schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO "${other}".schema_migrations (version, name) VALUES (9, 'their_migration')`);
		expect(await readSchemaState(pool, ledgerSchema(other))).toEqual({ version: 0, functions: null });
		for (const s of [schema, other]) {
			await expect(migrate(pool, ledgerSchema(s), true)).resolves.toBe(requiredVersion());
			const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${s}".schema_migrations`);
			expect(rows[0].n).toBe(1);
		}
	});

	it('migration 0012 applies over a 0011 (and a 0010) database holding data, by the migrator and by apply.sql', async () => {
		for (const [base, via] of [
			[11, 'migrator'],
			[11, 'psql'],
			[10, 'migrator'],
		] as const) {
			// A database at `base` with rows.
			const { schema } = await schemaAt(base, async (c) => {
				await c.query(`INSERT INTO operations (operation_key, status, fingerprint, fingerprint_alg, attempt, idempotency_key, external_ref, settled_at)
				               VALUES ('old:1', 'succeeded', '${'a'.repeat(64)}', 'sha256-jcs-rfc8785', 1, 'idem-1', 'ch_old', now())`);
				await c.query(`INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt) VALUES ('old:1', 'reserved', NULL, 'reserved', 1), ('old:1', 'confirmed_succeeded', 'reserved', 'succeeded', 1)`);
				// An untagged due task (a delayed one), as that version left it.
				await c.query(`INSERT INTO queue_tasks (queue, priority_group, status, run_at) VALUES ('up', 'vip', 'pending', now() - interval '1 minute')`);
			});
			const q = `"${schema}"`;
			await upgrade(schema, via);
			// The rows are intact; events written before 0012 have no db_role, new ones do.
			const { rows: ev } = await pool.query(`SELECT event, db_role FROM ${q}.operation_events ORDER BY event_id`);
			expect(ev).toEqual([
				{ event: 'reserved', db_role: null },
				{ event: 'confirmed_succeeded', db_role: null },
			]);
			const [again] = await reserveOperations(pool, ledgerSchema(schema), [{ index: 0, operationKey: 'old:1', fingerprint: 'a'.repeat(64), canonicalRequest: '{}', target: null, leaseSeconds: 60, settleSeconds: 120 }]);
			expect(again).toMatchObject({ outcome: 'already_succeeded', externalRef: 'ch_old' });
			// The new guard and index are in place; the old queue_tag_due overload is gone.
			const { rows: cat } = await pool.query(
				`SELECT to_regclass($1) AS old_idx, to_regclass($2) IS NOT NULL AS new_idx, to_regprocedure($3) AS old_fn,
				        (SELECT count(*)::int FROM pg_trigger WHERE tgrelid = to_regclass($4) AND tgname = 'operations_no_delete') AS guard`,
				[`${q}.queue_tasks_untagged_idx`, `${q}.queue_tasks_untagged_group_idx`, `${q}.queue_tag_due(text, timestamptz)`, `${q}.operations`],
			);
			expect(cat[0]).toEqual({ old_idx: null, new_idx: true, old_fn: null, guard: 1 });
			await expect(pool.query(`DELETE FROM ${q}.operation_events`)).rejects.toThrow(/append-only/);
			// The untagged task of the old version is tagged and claimed by a claim of its group.
			const got = await dequeue(pool, ledgerSchema(schema), { queue: 'up', limit: 5, leaseSeconds: 30, groups: [{ name: 'vip', weight: 1 }] });
			expect(got).toHaveLength(1);
		}
	});

	it('migration 0013 (cancel) applies over a 0012 database holding tasks, by the migrator and by apply.sql; a lease taken before it can be cancelled', async () => {
		for (const via of ['migrator', 'psql'] as const) {
			const token = '3f2c8a51-2d7e-4c59-9a61-7b1e0c4d9e21';
			const { schema, seeded: ids } = await schemaAt(12, async (c) => ({
				pending: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, dedupe_key) VALUES ('up', 'vip', 'pending', now(), 'k-pending') RETURNING id`),
				held: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, lease_token, lease_expires_at, dedupe_key)
				                 VALUES ('up', 'vip', 'processing', now(), 1, '${token}', now() + interval '10 minutes', 'k-held') RETURNING id`),
				done: await insertedId(c, `INSERT INTO queue_tasks_archive (id, queue, priority_group, status, payload, attempts, max_attempts, enqueued_at, finished_at)
				                 VALUES (9000001, 'up', 'vip', 'succeeded', '{}', 1, 5, now(), now()) RETURNING id`),
			}));
			const q = `"${schema}"`;
			await upgrade(schema, via);
			// The old rows are intact and none is cancel-requested.
			const { rows: live } = await pool.query(`SELECT id::text, status, dedupe_key, cancel_requested_at FROM ${q}.queue_tasks ORDER BY id`);
			expect(live).toEqual([
				{ id: ids.pending, status: 'pending', dedupe_key: 'k-pending', cancel_requested_at: null },
				{ id: ids.held, status: 'processing', dedupe_key: 'k-held', cancel_requested_at: null },
			]);
			const res = await cancel(pool, ledgerSchema(schema), [
				{ queue: 'up', taskId: ids.pending, reason: 'after upgrade' },
				{ queue: 'up', dedupeKey: 'k-held' },
				{ queue: 'up', taskId: ids.done },
			]);
			expect(res.map((r) => r.outcome)).toEqual(['cancelled', 'cancel_requested', 'finished']);
			// The lease taken before the upgrade learns of the cancel at its settle.
			expect((await complete(pool, ledgerSchema(schema), [{ taskId: ids.held, leaseToken: token }]))[0]).toMatchObject({ outcome: 'cancelled', status: 'cancelled' });
			const { rows: arch } = await pool.query(`SELECT id::text, status, cancel_reason, lease_end FROM ${q}.queue_tasks_archive ORDER BY id`);
			expect(arch).toEqual([
				{ id: ids.pending, status: 'cancelled', cancel_reason: 'after upgrade', lease_end: null },
				{ id: ids.held, status: 'cancelled', cancel_reason: 'cancelled', lease_end: 'cancelled' },
				{ id: ids.done, status: 'succeeded', cancel_reason: null, lease_end: null },
			]);
		}
	});

	it('the enqueue-modes migration (replace, throttle, debounce) applies over the version before it holding tasks and the old queue_enqueue, by the migrator and by apply.sql', async () => {
		// Found by name, so the test follows a renumbering of the file.
		const before = versionBefore('queue_enqueue_modes');
		for (const via of ['migrator', 'psql'] as const) {
			const token = '5b1d7a02-8c4e-4f1a-9d3b-2e6f0a7c9b14';
			const { schema, seeded: ids } = await schemaAt(before, async (c) => {
				// The old function's shape (its return type without outcome): the upgrade must replace it.
				await c.query(`CREATE FUNCTION queue_enqueue(p_items jsonb) RETURNS TABLE (idx integer, id bigint, deduplicated boolean, queue text, priority_group text, status text,
				                 payload jsonb, dedupe_key text, run_at timestamptz, attempts integer, max_attempts integer, enqueued_at timestamptz)
				               LANGUAGE sql AS $$ SELECT NULL::integer, NULL::bigint, NULL::boolean, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::integer, NULL::integer, NULL::timestamptz WHERE false $$`);
				return {
					pending: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, dedupe_key, payload, vtag) VALUES ('up', 'vip', 'pending', now(), 'k-pending', '{"v": 0}', 1) RETURNING id`),
					held: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, lease_token, lease_expires_at, dedupe_key, payload)
					                 VALUES ('up', 'vip', 'processing', now(), 1, '${token}', now() + interval '10 minutes', 'k-held', '{"v": 0}') RETURNING id`),
				};
			});
			const q = `"${schema}"`;
			await upgrade(schema, via);
			const res = await enqueue(pool, ledgerSchema(schema), [
				{ queue: 'up', group: 'vip', payload: { v: 1 }, dedupeKey: 'k-pending', onDuplicate: 'payload' },
				{ queue: 'up', group: 'vip', payload: { v: 1 }, dedupeKey: 'k-held', onDuplicate: 'payload' },
				{ queue: 'up', group: 'vip', payload: { v: 1 }, dedupeKey: 'k-new', throttleSeconds: 60 },
				{ queue: 'up', group: 'vip', payload: { v: 2 }, dedupeKey: 'k-new', throttleSeconds: 60 },
			]);
			expect(res.map((r) => [r.outcome, r.taskId === ids.pending || r.taskId === ids.held ? r.taskId : 'new'])).toEqual([
				['replaced', ids.pending],
				['kept_processing', ids.held],
				['enqueued', 'new'],
				['throttled', 'new'],
			]);
			const { rows } = await pool.query(`SELECT id::text, payload, vtag, superseded_dedupe_key FROM ${q}.queue_tasks WHERE id = ANY ($1::bigint[]) ORDER BY id`, [[ids.pending, ids.held]]);
			expect(rows).toEqual([
				{ id: ids.pending, payload: { v: 1 }, vtag: 1, superseded_dedupe_key: null },
				{ id: ids.held, payload: { v: 0 }, vtag: null, superseded_dedupe_key: null },
			]);
			// The lease taken before the upgrade settles as usual.
			expect((await complete(pool, ledgerSchema(schema), [{ taskId: ids.held, leaseToken: token }]))[0]).toMatchObject({ outcome: 'completed' });
		}
	});

	it('the pause migration (queue_pause) applies over the database before it holding tasks, by the migrator and by apply.sql; a lease taken before it works through a pause', async () => {
		// The migration's number is read from its file name, written nowhere else in this test.
		for (const via of ['migrator', 'psql'] as const) {
			const token = '5b7d1e0a-8c3f-4a2e-9d61-2f4c6b8a0e13';
			const { schema, seeded: held } = await schemaAt(versionBefore('queue_pause'), async (c) => {
				await c.query(`INSERT INTO queue_tasks (queue, priority_group, status, run_at, vtag) VALUES ('up', 'vip', 'pending', now(), 1), ('up', 'std', 'pending', now(), 1)`);
				return insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, lease_token, lease_expires_at)
				                      VALUES ('up', 'vip', 'processing', now(), 1, '${token}', now() + interval '10 minutes') RETURNING id`);
			});
			await upgrade(schema, via);
			// Nothing is paused after the upgrade; queue_health (re-created with its new column) says so.
			expect((await stats(pool, ledgerSchema(schema), 'up')).paused).toEqual([]);
			expect((await pause(pool, ledgerSchema(schema), [{ queue: 'up', group: 'vip', reason: 'after upgrade' }]))[0]).toMatchObject({ outcome: 'paused', untagged: 1 });
			const groups = [
				{ name: 'vip', weight: 1 },
				{ name: 'std', weight: 1 },
			];
			expect((await dequeue(pool, ledgerSchema(schema), { queue: 'up', limit: 10, leaseSeconds: 30, groups })).map((t) => t.group)).toEqual(['std']);
			// The lease taken before the upgrade extends and completes while its group is paused.
			expect((await extendLease(pool, ledgerSchema(schema), [{ taskId: held, leaseToken: token, leaseSeconds: 60 }]))[0].outcome).toBe('extended');
			expect((await complete(pool, ledgerSchema(schema), [{ taskId: held, leaseToken: token }]))[0].outcome).toBe('completed');
			expect((await resume(pool, ledgerSchema(schema), [{ queue: 'up', group: 'vip' }]))[0].outcome).toBe('resumed');
			expect((await dequeue(pool, ledgerSchema(schema), { queue: 'up', limit: 10, leaseSeconds: 30, groups })).map((t) => t.group)).toEqual(['vip']);
		}
	});

	it('the Settle by ID migration applies over the version before it holding tasks, by the migrator and by apply.sql; a lease taken before it is fenced off', async () => {
		// Its version is read from its file name, so a renumbering at merge changes nothing here.
		for (const via of ['migrator', 'psql'] as const) {
			const token = '5b7e2c10-8a4d-4f1e-9c3b-2d6a0e8f1c47';
			const { schema, seeded: ids } = await schemaAt(versionBefore('queue_settle_by_id'), async (c) => ({
				pending: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at) VALUES ('up', 'vip', 'pending', now()) RETURNING id`),
				held: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, lease_token, lease_expires_at)
				                 VALUES ('up', 'vip', 'processing', now(), 1, '${token}', now() + interval '10 minutes') RETURNING id`),
				dead: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, dead_at, dead_reason, last_error)
				                 VALUES ('up', 'vip', 'dead', now(), 5, now(), 'max_attempts_reached', 'boom') RETURNING id`),
			}));
			const q = `"${schema}"`;
			await upgrade(schema, via);
			const { rows: old } = await pool.query(`SELECT id::text, status, operator_action FROM ${q}.queue_tasks ORDER BY id`);
			expect(old).toEqual([
				{ id: ids.pending, status: 'pending', operator_action: null },
				{ id: ids.held, status: 'processing', operator_action: null },
				{ id: ids.dead, status: 'dead', operator_action: null },
			]);
			const res = await settleById(pool, ledgerSchema(schema), [
				{ queue: 'up', taskId: ids.pending, action: 'fail', reason: 'after upgrade' },
				{ queue: 'up', taskId: ids.held, action: 'complete', result: { by: 'hand' } },
				{ queue: 'up', taskId: ids.dead, action: 'complete' },
			]);
			expect(res.map((r) => [r.outcome, r.leaseEnded])).toEqual([
				['dead', false],
				['completed', true],
				['completed', false],
			]);
			// The lease taken before the upgrade is told it lost the task; the operator's result stays.
			expect((await complete(pool, ledgerSchema(schema), [{ taskId: ids.held, leaseToken: token, result: { by: 'holder' } }]))[0]).toMatchObject({ outcome: 'lease_lost' });
			const { rows: arch } = await pool.query(`SELECT id::text, status, result, lease_end, operator_action FROM ${q}.queue_tasks_archive ORDER BY id`);
			expect(arch).toEqual([
				{ id: ids.held, status: 'succeeded', result: { by: 'hand' }, lease_end: 'operator', operator_action: 'complete' },
				{ id: ids.dead, status: 'succeeded', result: null, lease_end: null, operator_action: 'complete' },
			]);
			expect((await pool.query(`SELECT dead_reason, operator_reason FROM ${q}.queue_tasks WHERE id = $1`, [ids.pending])).rows[0]).toEqual({ dead_reason: 'operator_failed', operator_reason: 'after upgrade' });
		}
	});

	it('the serial keys migration applies over the version before it holding tasks, by the migrator and by apply.sql; the tasks run as before, new ones queue per key', async () => {
		for (const via of ['migrator', 'psql'] as const) {
			const token = '6c8f3d21-9b5e-4a2f-8d4c-3e7b1f9a2d58';
			const { schema, seeded: ids } = await schemaAt(versionBefore('queue_serial_keys'), async (c) => {
				const seeded = {
					ready: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, vtag) VALUES ('up', 'vip', 'pending', now() - interval '1 minute', 1) RETURNING id`),
					held: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, lease_token, lease_expires_at)
					                 VALUES ('up', 'vip', 'processing', now(), 1, '${token}', now() + interval '10 minutes') RETURNING id`),
					dead: await insertedId(c, `INSERT INTO queue_tasks (queue, priority_group, status, run_at, attempts, dead_at, dead_reason, last_error)
					                 VALUES ('up', 'vip', 'dead', now(), 5, now(), 'max_attempts_reached', 'boom') RETURNING id`),
				};
				await c.query(`INSERT INTO queue_group_tags (queue, priority_group, last_tag) VALUES ('up', 'vip', 1)`);
				return seeded;
			});
			const q = `"${schema}"`;
			await upgrade(schema, via);
			// The indexes keep their names, now leaving blocked tasks out.
			const { rows: idx } = await pool.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname IN ('queue_tasks_ready_idx', 'queue_tasks_untagged_group_idx', 'queue_tasks_serial_idx') ORDER BY indexname`, [schema]);
			expect(idx.map((r) => r.indexname)).toEqual(['queue_tasks_ready_idx', 'queue_tasks_serial_idx', 'queue_tasks_untagged_group_idx']);
			expect(idx.filter((r) => r.indexname !== 'queue_tasks_serial_idx').every((r) => /NOT serial_wait/.test(r.indexdef))).toBe(true);
			const { rows: old } = await pool.query(`SELECT id::text, status, serial_key, serial_wait FROM ${q}.queue_tasks ORDER BY id`);
			expect(old).toEqual([
				{ id: ids.ready, status: 'pending', serial_key: null, serial_wait: false },
				{ id: ids.held, status: 'processing', serial_key: null, serial_wait: false },
				{ id: ids.dead, status: 'dead', serial_key: null, serial_wait: false },
			]);
			// The old tasks are claimed and settled as before; new tasks with a key queue behind each other.
			const groups = [{ name: 'vip', weight: 1 }];
			expect((await dequeue(pool, ledgerSchema(schema), { queue: 'up', limit: 10, leaseSeconds: 30, groups })).map((t) => t.taskId)).toEqual([ids.ready]);
			expect((await complete(pool, ledgerSchema(schema), [{ taskId: ids.held, leaseToken: token }]))[0].outcome).toBe('completed');
			const added = await enqueue(pool, ledgerSchema(schema), [
				{ queue: 'up', group: 'vip', payload: {}, serialKey: 'acct-1' },
				{ queue: 'up', group: 'vip', payload: {}, serialKey: 'acct-1' },
			]);
			const first = await dequeue(pool, ledgerSchema(schema), { queue: 'up', limit: 10, leaseSeconds: 30, groups });
			expect(first.map((t) => t.taskId)).toEqual([added[0].taskId]);
			await complete(pool, ledgerSchema(schema), first);
			expect((await dequeue(pool, ledgerSchema(schema), { queue: 'up', limit: 10, leaseSeconds: 30, groups })).map((t) => t.taskId)).toEqual([added[1].taskId]);
		}
	});

	it('renames a legacy version table of ours (schema_migrations) to ol_schema_migrations on upgrade', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		await pool.query(`ALTER TABLE "${schema}".ol_schema_migrations RENAME TO schema_migrations; DELETE FROM "${schema}".schema_migrations WHERE version > 4`);
		expect((await readSchemaState(pool, ledgerSchema(schema))).version).toBe(4);
		await expect(migrate(pool, ledgerSchema(schema), true)).resolves.toBe(requiredVersion());
		const { rows } = await pool.query(`SELECT to_regclass($1) AS old, to_regclass($2) AS new`, [`"${schema}".schema_migrations`, `"${schema}".ol_schema_migrations`]);
		expect(rows[0].old).toBeNull();
		expect(rows[0].new).not.toBeNull();
		// The same through apply.sql.
		const viaPsql = fresh();
		await migrate(pool, ledgerSchema(viaPsql), true);
		await pool.query(`ALTER TABLE "${viaPsql}".ol_schema_migrations RENAME TO schema_migrations; DELETE FROM "${viaPsql}".schema_migrations WHERE version > 4`);
		applyWithPsql(viaPsql);
		expect((await readSchemaState(pool, ledgerSchema(viaPsql))).version).toBe(requiredVersion());
	});

	it('waits for the migration lock at most its lock timeout, with an error naming the bound; nothing is applied', async () => {
		const schema = fresh();
		// Another session holds the migration's advisory lock (as a migrator at work would).
		const holder = new Client({ connectionString: DATABASE_URL });
		await holder.connect();
		await holder.query('BEGIN');
		await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`n8n-nodes-operation-ledger:migrate:${schema}`]);
		try {
			const t0 = Date.now();
			const err = await migrate(pool, ledgerSchema(schema), true, { lockTimeoutMs: 300 }).catch((e: unknown) => e);
			const ms = Date.now() - t0;
			expect(err).toBeInstanceOf(MigrationLockTimeoutError);
			expect((err as MigrationLockTimeoutError).waitingFor).toBe('advisory lock');
			expect((err as Error).message).toMatch(new RegExp(`"${schema}": another session held the migration lock for longer than the migration lock timeout \\(300 ms\\), so nothing was applied`));
			expect(ms).toBeGreaterThanOrEqual(250);
			expect(ms).toBeLessThan(5_000);
			expect((await readSchemaState(pool, ledgerSchema(schema))).version).toBe(0);
			// psql with apply.sql is bounded the same way (-v lock_timeout, default 60 s).
			let psqlErr = '';
			try {
				execFileSync('psql', [DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-v', 'lock_timeout=300', '-f', 'schema/apply.sql'], { stdio: 'pipe', timeout: 20_000 });
			} catch (e) {
				psqlErr = String((e as { stderr?: Buffer }).stderr ?? e);
			}
			expect(psqlErr).toMatch(/canceling statement due to lock timeout/);
		} finally {
			await holder.query('ROLLBACK');
			await holder.end();
		}
		await expect(migrate(pool, ledgerSchema(schema), true, { lockTimeoutMs: 300 })).resolves.toBe(requiredVersion());
	});

	it('a migration statement that would queue behind a long transaction on its table gives up after the lock timeout', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		// Behind from the last migration whose DDL needs a queue table (ALTER TABLE queue_tasks), which a
		// long transaction holds (a later one may need none: the pause migration only creates tables of its own).
		const last = loadMigrations().filter((m) => /ALTER TABLE queue_tasks\b/.test(m.sql)).at(-1)!;
		await pool.query(`DELETE FROM "${schema}".ol_schema_migrations WHERE version >= $1`, [last.version]);
		const holder = new Client({ connectionString: DATABASE_URL });
		await holder.connect();
		await holder.query('BEGIN');
		await holder.query(`LOCK TABLE "${schema}".queue_tasks, "${schema}".operations, "${schema}".queue_group_weights IN ACCESS EXCLUSIVE MODE`);
		try {
			const err = await migrate(pool, ledgerSchema(schema), true, { lockTimeoutMs: 300 }).catch((e: unknown) => e);
			expect(err).toBeInstanceOf(MigrationLockTimeoutError);
			expect((err as Error).message).toMatch(/lock timeout \(300 ms\)/);
		} finally {
			await holder.query('ROLLBACK');
			await holder.end();
		}
		await expect(migrate(pool, ledgerSchema(schema), true, { lockTimeoutMs: 300 })).resolves.toBe(requiredVersion());
	});

	it('rejects schema names that try to inject SQL', async () => {
		for (const bad of ['x"; DROP TABLE y; --', 'Upper', '1abc', '', 'a'.repeat(64), 'a b']) {
			expect(() => ledgerSchema(bad)).toThrow(InvalidSchemaNameError);
			// A raw string that reaches the migrator anyway (plain JavaScript, a cast) never becomes SQL text.
			await expect(migrate(pool, bad as never, true)).rejects.toBeInstanceOf(InvalidSchemaNameError);
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

	it('gives up within the Lock Timeout when the schema is locked by another session, and says so', async () => {
		const schema = fresh();
		await migrate(pool, ledgerSchema(schema), true);
		const holder = new Client({ connectionString: DATABASE_URL });
		await holder.connect();
		await holder.query('BEGIN');
		await holder.query(`LOCK TABLE "${schema}".ol_schema_migrations IN ACCESS EXCLUSIVE MODE`);
		try {
			const t0 = Date.now();
			const r = await test({ ...base, schema, lockTimeoutMs: 300 });
			expect(r).toEqual({
				status: 'Error',
				message: `Connected, but the schema "${schema}" is locked by another session (a migration or maintenance?): gave up after the Lock Timeout (300 ms)`,
			});
			expect(Date.now() - t0).toBeLessThan(5_000);
		} finally {
			await holder.query('ROLLBACK');
			await holder.end();
		}
		await expect(test({ ...base, schema, lockTimeoutMs: 300 })).resolves.toEqual({ status: 'OK', message: 'Connection successful' });
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

describe('migration 0005 on a schema with data', () => {
	it('hashes stored lease and claim tokens in place, drops holderToken from events, and gives unknown rows a settle window', async () => {
		const schema = fresh();
		const { renderMigration: render } = await import('../../../src/db/migrate');
		const { createHash } = await import('node:crypto');
		for (const m of loadMigrations().filter((x) => x.version <= 4)) await pool.query(render(m.sql, ledgerSchema(schema)));
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
		await migrate(pool, ledgerSchema(schema), true);
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
