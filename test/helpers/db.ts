import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { migrate } from '../../src/db/migrate';

export const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh schema name for one test file. */
export function randomSchema(prefix = 'ol_test'): string {
	return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** A pool on the test database plus a migrated schema of its own; drop() removes both. */
export async function testDatabase(opts: { max?: number; prefix?: string } = {}) {
	const pool = new Pool({ connectionString: DATABASE_URL, max: opts.max ?? 10 });
	const schema = randomSchema(opts.prefix);
	await migrate(pool, schema, true);
	return {
		pool,
		schema,
		schemaSql: `"${schema}"`,
		async drop() {
			await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			await pool.end();
		},
	};
}

/**
 * Moves the ledger's clock (ledger_now(), see schema/functions/ledger/ledger_now.sql) of one test
 * schema by `offsetSeconds` from the real now(); 0 puts it back. Needs the schema owner's rights,
 * as the tests have. Lets tests pass settle windows, leases and backoffs without sleeping.
 */
export async function setLedgerClock(pool: Pick<Pool, 'query'>, schema: string, offsetSeconds: number): Promise<void> {
	const secs = Number(offsetSeconds);
	if (!Number.isFinite(secs)) throw new Error('offset must be a number');
	await pool.query(
		`CREATE OR REPLACE FUNCTION "${schema}".ledger_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() + make_interval(secs => ${secs}) $$`,
	);
}
