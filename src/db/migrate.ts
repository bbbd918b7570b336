/**
 * Versioned migrations from schema/NNNN_name.sql.
 *
 * Each file is plain SQL a DBA can apply with
 *   psql -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -f schema/0001_ledger.sql
 * The only psql variable is :"schema"; this runner substitutes it with the validated, quoted
 * schema name, applies every pending file in one transaction under a transaction-level advisory
 * lock (so concurrent first uses from several workers apply it once, also through PgBouncer in
 * transaction mode), and each file records its own version in <schema>.schema_migrations.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Pool as PgPool } from 'pg';
import { quoteSchema } from './identifiers';
import { withClient } from './pool';

export interface Migration {
	version: number;
	name: string;
	file: string;
	sql: string;
}

/** Raised when the schema is missing or behind and the nodes may not apply it. */
export class SchemaNotReadyError extends Error {
	constructor(
		public readonly schema: string,
		public readonly currentVersion: number,
		public readonly requiredVersion: number,
	) {
		super(
			currentVersion === 0
				? `The ledger schema "${schema}" is not set up in this database, and the credential does not allow ` +
						`applying it automatically. Apply schema/*.sql with psql (see the README, "Applying the schema"), ` +
						`or switch on "Apply Schema Automatically" in the credential.`
				: `The ledger schema "${schema}" is at version ${currentVersion} but this package needs version ` +
						`${requiredVersion}. Apply the newer schema/*.sql files with psql, or switch on "Apply Schema Automatically".`,
		);
		this.name = 'SchemaNotReadyError';
	}
}

function schemaDir(): string {
	// src/db (ts-jest) and dist/src/db (built) both sit two levels below the folder holding schema/.
	const candidates = [path.resolve(__dirname, '../../schema'), path.resolve(__dirname, '../../../schema')];
	for (const c of candidates) if (existsSync(c)) return c;
	throw new Error(`schema/ folder not found next to ${__dirname}`);
}

let cached: Migration[] | undefined;
/** All migrations shipped with the package, ordered by version. */
export function loadMigrations(): Migration[] {
	if (cached) return cached;
	const dir = schemaDir();
	cached = readdirSync(dir)
		.map((file) => /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file))
		.filter((m): m is RegExpExecArray => m !== null)
		.map((m) => ({
			version: Number(m[1]),
			name: m[2],
			file: m[0],
			sql: readFileSync(path.join(dir, m[0]), 'utf8'),
		}))
		.sort((a, b) => a.version - b.version);
	return cached;
}

/** Substitutes psql's :"schema" variable with the quoted schema name. */
export function renderMigration(sql: string, schema: string): string {
	const q = quoteSchema(schema);
	return sql.replace(/:"schema"/g, q).replace(/:'schema'/g, `'${schema}'`);
}

/** The highest applied version in `schema`, 0 when the schema or its version table is missing. */
export async function currentVersion(pool: PgPool, schema: string): Promise<number> {
	const q = quoteSchema(schema);
	const { rows } = await pool.query<{ reg: string | null }>('SELECT to_regclass($1) AS reg', [`${q}.schema_migrations`]);
	if (!rows[0].reg) return 0;
	const r = await pool.query<{ v: number | null }>(`SELECT max(version)::int AS v FROM ${q}.schema_migrations`);
	return r.rows[0].v ?? 0;
}

/** The version this package needs. */
export function requiredVersion(): number {
	const all = loadMigrations();
	return all.length ? all[all.length - 1].version : 0;
}

/** Errors a concurrent migrator can cause in the instant it commits; one retry sees its work. */
const RACE_CODES = new Set(['42P06', '42P07', '42710', '42723', '3F000', '42P01', '23505']);

/**
 * Applies pending migrations (when `autoApply`) or verifies the schema is current.
 * Returns the version applied. Throws SchemaNotReadyError when behind and `autoApply` is false.
 *
 * Everything happens in ONE transaction on one connection, so it is also safe through a pooler in
 * transaction mode (PgBouncer), which may run each transaction on a different server connection:
 *   BEGIN; pg_advisory_xact_lock (serialises concurrent first uses, released by COMMIT/ROLLBACK,
 *   so it can never leak); read the applied version from the catalogs (the first catalog read after
 *   the lock also makes Postgres process the invalidations of a migrator that committed while we
 *   waited); apply what is missing; RESET search_path (the files SET it; no server connection keeps
 *   it); COMMIT. A race error from a concurrent migrator (duplicate object) is retried once.
 */
export async function migrate(pool: PgPool, schema: string, autoApply: boolean): Promise<number> {
	const required = requiredVersion();
	const before = await currentVersion(pool, schema);
	if (before >= required) return before;
	if (!autoApply) throw new SchemaNotReadyError(schema, before, required);
	const q = quoteSchema(schema);
	const lockKey = `n8n-nodes-operation-ledger:migrate:${schema}`;
	return withClient(pool, async (client) => {
		for (let attempt = 1; ; attempt++) {
			await client.query('BEGIN');
			try {
				await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lockKey]);
				const { rows } = await client.query<{ present: boolean }>(
					`SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
					                 WHERE n.nspname = $1 AND c.relname = 'schema_migrations') AS present`,
					[schema],
				);
				let version = 0;
				if (rows[0].present) {
					const r = await client.query<{ v: number | null }>(`SELECT max(version)::int AS v FROM ${q}.schema_migrations`);
					version = r.rows[0].v ?? 0;
				}
				for (const m of loadMigrations()) {
					if (m.version <= version) continue;
					await client.query(renderMigration(m.sql, schema));
					version = m.version;
				}
				await client.query('RESET search_path');
				await client.query('COMMIT');
				return version;
			} catch (e) {
				await client.query('ROLLBACK').catch(() => undefined);
				if (attempt < 2 && RACE_CODES.has((e as { code?: string }).code ?? '')) continue;
				throw e;
			}
		}
	});
}

const ready = new WeakMap<PgPool, Map<string, Promise<number>>>();
/**
 * Memoised migrate(): the check runs once per pool and schema per process. A failed check is
 * forgotten so the next execution tries again (e.g. after a DBA applied the schema).
 */
export function ensureSchema(pool: PgPool, schema: string, autoApply: boolean): Promise<number> {
	let perPool = ready.get(pool);
	if (!perPool) ready.set(pool, (perPool = new Map()));
	const key = `${schema}\u0000${autoApply}`;
	let p = perPool.get(key);
	if (!p) {
		const map = perPool;
		p = migrate(pool, schema, autoApply);
		map.set(key, p);
		p.catch(() => map.delete(key));
	}
	return p;
}
