import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { FUNCTION_SECURITY_FILE, hashFunctionFiles, loadFunctionSet, loadMigrations } from '../../../src/db/migrate';

describe('schema files', () => {
	it('schema/apply.sql is the current output of scripts/gen-schema-apply.mjs', () => {
		expect(() => execFileSync(process.execPath, ['scripts/gen-schema-apply.mjs', '--check'], { stdio: 'pipe' })).not.toThrow();
	});

	it('apply.sql records the same function-set hash the migrator computes', () => {
		const text = readFileSync('schema/apply.sql', 'utf8');
		expect(text).toContain(`'${loadFunctionSet().hash}'`);
		expect(hashFunctionFiles(loadFunctionSet().files)).toBe(loadFunctionSet().hash);
	});

	it('migrations hold no functions but the trigger functions, and each function file holds exactly one function named as the file', () => {
		for (const m of loadMigrations()) {
			const fns = [...m.sql.matchAll(/CREATE (?:OR REPLACE )?FUNCTION\s+(\w+)/g)].map((x) => x[1]);
			expect(fns.filter((f) => f !== 'operation_events_append_only' && f !== 'ledger_refuse_truncate')).toEqual([]);
		}
		const files = loadFunctionSet().files;
		expect(files[files.length - 1].file).toBe(FUNCTION_SECURITY_FILE);
		for (const f of files.filter((x) => x.file.startsWith('functions/'))) {
			const fns = [...f.sql.matchAll(/CREATE (?:OR REPLACE )?FUNCTION\s+(\w+)/g)].map((x) => x[1]);
			expect(fns).toEqual([f.file.replace(/^.*\//, '').replace(/\.sql$/, '')]);
			expect(f.sql).toMatch(/CREATE OR REPLACE FUNCTION/);
		}
	});

	it('migrations record their version in ol_schema_migrations, never in a table named schema_migrations', () => {
		for (const m of loadMigrations()) {
			expect(m.sql).not.toMatch(/(^|[^_a-z])schema_migrations/);
			expect(m.sql).toContain(`INSERT INTO ol_schema_migrations (version, name) VALUES (${m.version}, '${m.name}')`);
		}
	});

	it('migration versions are 1..n without gaps', () => {
		expect(loadMigrations().map((m) => m.version)).toEqual(loadMigrations().map((_, i) => i + 1));
	});
});
