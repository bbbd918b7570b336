/**
 * Run as root, Postgres runs as the OS user `postgres`; a clone inside a folder only root may enter
 * (`mktemp -d` makes mode 0700) is out of its reach. scripts/lib/pg-binaries.cjs then gives the
 * embedded server's binaries and the clusters a folder under the system's temp directory
 * (runnableBinaries, clusterBaseDir). Not root (or no `postgres` user): nothing moves.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pgBinaries, repoRoot } from '../../helpers/privatePostgres';

describe('Postgres binaries and clusters the server user can reach', () => {
	let privateDir: string;
	let fakeRepo: string;

	beforeAll(() => {
		// A "clone" inside a 0700 folder: its node_modules is the real one (a symlink).
		privateDir = mkdtempSync(path.join(os.tmpdir(), 'ol-private-'));
		fakeRepo = path.join(privateDir, 'clone');
		mkdirSync(fakeRepo);
		symlinkSync(path.join(repoRoot, 'node_modules'), path.join(fakeRepo, 'node_modules'));
	});
	afterAll(() => rmSync(privateDir, { recursive: true, force: true }));

	const owner = pgBinaries.isRoot() ? pgBinaries.postgresUser() : undefined;

	it('keeps everything in the clone when Postgres can reach it, else moves it to a reachable folder', () => {
		expect(statSync(privateDir).mode & 0o777).toBe(0o700);
		const base = pgBinaries.clusterBaseDir(fakeRepo);
		const pkg = pgBinaries.platformPackageDir(fakeRepo);
		expect(pkg).toBeDefined();
		const { pkgDir, libDir } = pgBinaries.runnableBinaries(fakeRepo, pgBinaries.DEFAULT_PG_MAJOR, pkg!, pgBinaries.embeddedLibraryDir(fakeRepo));
		if (!owner) {
			// Not root: the server runs as this user, who can reach the clone.
			expect(base).toBe(path.join(fakeRepo, '.cache'));
			expect(pkgDir).toBe(pkg);
			return;
		}
		expect(base.startsWith(os.tmpdir())).toBe(true);
		expect(base.startsWith(privateDir)).toBe(false);
		expect(pkgDir.startsWith(base)).toBe(true);
		expect(libDir.startsWith(base)).toBe(true);
		// The OS user postgres can run the moved server binary, and not the clone's own.
		const asPostgres = (bin: string) => spawnSync(bin, ['--version'], { uid: owner.uid, gid: owner.gid, encoding: 'utf8' });
		expect(asPostgres(path.join(pkgDir, 'native', 'bin', 'postgres')).stdout).toMatch(/postgres \(PostgreSQL\) \d+/);
		expect(asPostgres(path.join(pkg!, 'native', 'bin', 'postgres')).status).not.toBe(0);
		// One folder per clone: the same clone gets the same folder again.
		expect(pgBinaries.clusterBaseDir(fakeRepo)).toBe(base);
		rmSync(base, { recursive: true, force: true });
	});
});
