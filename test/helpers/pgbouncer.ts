/**
 * PgBouncer (Debian's `pgbouncer` package) in front of a private Postgres, for deployment tests.
 * ensurePgbouncer() installs it with apt-get when it is missing and fails with a clear message when
 * it cannot. The process runs in the foreground as a child of the test (as the OS user `postgres`
 * when the test runs as root) and is stopped by its pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, chownSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort, pgBinaries, repoRoot } from './privatePostgres';
import { waitFor } from './wait';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureDebianProgram } = require('../../scripts/lib/debian-package.cjs') as {
	ensureDebianProgram(o: { name: string; pkg?: string; candidates?: string[] }): string;
};

/** The pgbouncer binary; installs Debian's package when missing (scripts/lib/debian-package.cjs). Throws a clear error when it cannot. */
export function ensurePgbouncer(): string {
	return ensureDebianProgram({ name: 'pgbouncer', candidates: ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'] });
}

export interface Bouncer {
	port: number;
	/** URL of database `ledger` through PgBouncer. */
	url: string;
	/** URL of PgBouncer's admin console (database `pgbouncer`). */
	adminUrl: string;
	log(): string;
	stop(): Promise<void>;
}

/** Whether a TCP connection to 127.0.0.1:`port` is accepted now. */
function accepts(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const s = net.connect(port, '127.0.0.1');
		s.once('connect', () => {
			s.destroy();
			resolve(true);
		});
		s.once('error', () => {
			s.destroy();
			resolve(false);
		});
	});
}

/** True once `port` accepts connections, false when it does not within `ms` milliseconds. */
function waitForPort(port: number, ms: number): Promise<boolean> {
	return waitFor(() => accepts(port), { what: `PgBouncer accepting on port ${port}`, timeoutMs: ms, intervalMs: 50 }).then(
		() => true,
		() => false,
	);
}

/** Starts PgBouncer in `poolMode` in front of 127.0.0.1:`pgPort`/ledger (trust auth as `postgres`). */
export async function startPgbouncer(pgPort: number, poolMode: 'transaction' | 'session' = 'transaction', poolSize = 5): Promise<Bouncer> {
	const bin = ensurePgbouncer();
	const dir = path.join(pgBinaries.clusterBaseDir(repoRoot), 'hardening', `pgbouncer-${randomBytes(4).toString('hex')}`);
	mkdirSync(dir, { recursive: true });
	const port = await freePort();
	const logFile = path.join(dir, 'pgbouncer.log');
	writeFileSync(path.join(dir, 'users.txt'), '"postgres" ""\n');
	writeFileSync(
		path.join(dir, 'pgbouncer.ini'),
		[
			'[databases]',
			`ledger = host=127.0.0.1 port=${pgPort} dbname=ledger user=postgres`,
			'[pgbouncer]',
			'listen_addr = 127.0.0.1',
			`listen_port = ${port}`,
			'unix_socket_dir =',
			'auth_type = trust',
			`auth_file = ${path.join(dir, 'users.txt')}`,
			`pool_mode = ${poolMode}`,
			'max_client_conn = 500',
			`default_pool_size = ${poolSize}`,
			`logfile = ${logFile}`,
			'admin_users = postgres',
			'ignore_startup_parameters = extra_float_digits',
			'',
		].join('\n'),
	);
	writeFileSync(logFile, '');
	const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
	if (asRoot) {
		const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
		const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
		for (const f of ['', 'users.txt', 'pgbouncer.ini', 'pgbouncer.log']) chownSync(path.join(dir, f), uid, gid);
	}
	const child: ChildProcess = spawn(bin, [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
	let output = '';
	child.stdout?.on('data', (d) => (output += d));
	child.stderr?.on('data', (d) => (output += d));
	const up = await waitForPort(port, 10_000);
	if (!up || child.exitCode !== null) {
		child.kill('SIGKILL');
		throw new Error(`PgBouncer did not start: ${output}\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`);
	}
	return {
		port,
		url: `postgres://postgres@127.0.0.1:${port}/ledger`,
		adminUrl: `postgres://postgres@127.0.0.1:${port}/pgbouncer`,
		log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') + output,
		async stop() {
			if (child.exitCode === null) {
				child.kill('SIGINT');
				// Its exit, or SIGKILL when it has not exited within 2.5 s.
				const exited = () => child.exitCode !== null || child.signalCode !== null;
				await waitFor(exited, { what: 'PgBouncer exiting after SIGINT', timeoutMs: 2500, intervalMs: 50 }).catch(() => undefined);
				if (!exited()) child.kill('SIGKILL');
			}
			rmSync(dir, { recursive: true, force: true });
		},
	};
}
