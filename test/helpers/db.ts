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
