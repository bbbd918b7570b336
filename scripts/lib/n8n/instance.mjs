// One n8n "installation" for a test or the demo: a user folder with this package's tarball
// installed into .n8n/nodes with npm (docs/install.md's route), its own database, its
// configuration, its CLI and its long-running processes. createN8nInstance (at the end) puts the parts below together.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../embedded-pg.mjs';
import { createDatabase, dropDatabase, parseDbUrl, partsToUrl } from './database.mjs';
import { fileSize, groupAlive, killGroup, readFrom, run, tail, trackGroup, untrackGroup, within } from './process.mjs';
import { parseRunOutput } from './run-data.mjs';
import { ensureN8n, N8N_MAJOR, PACKAGE_NAME } from './runtime.mjs';

// ---------------------------------------------------------------------------------------------
// Folders and log

/**
 * A fresh temp folder for one instance: { root, userFolder (N8N_USER_FOLDER), nodesDir
 * (<userFolder>/.n8n/nodes, where community packages go), logFile (every process's output and the
 * harness's notes), note(text) (appends a timestamped harness line to the log) }.
 */
function instanceFolders() {
	const root = mkdtempSync(path.join(os.tmpdir(), 'n8n-e2e-'));
	const userFolder = path.join(root, 'user');
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	const logFile = path.join(root, 'n8n.log');
	mkdirSync(nodesDir, { recursive: true });
	writeFileSync(logFile, '');
	const note = (m) => appendFileSync(logFile, `\n[harness ${new Date().toISOString()}] ${m}\n`);
	return { root, userFolder, nodesDir, logFile, note };
}

// ---------------------------------------------------------------------------------------------
// Configuration

/**
 * The environment every n8n process of the instance runs with: the runtime's PATH, n8n's own
 * database on `server`/`dbName`, loopback only (server, webhooks and the task-runner broker), no
 * telemetry, banners, templates or version checks, community packages on, and `extraEnv` last (it
 * wins). NODE_ENV is removed (the repository's CI value would switch n8n into its test modes). In
 * queue mode (EXECUTIONS_MODE=queue) the Bull queue and the Redis key prefix default to names
 * derived from `dbName`, so deployments sharing one Redis never take each other's jobs, cache
 * entries or commands.
 */
function n8nEnvironment({ rt, server, dbName, userFolder, port, brokerPort, encryptionKey, extraEnv = {} }) {
	const env = {
		...process.env,
		PATH: rt.env.PATH,
		N8N_USER_FOLDER: userFolder,
		DB_TYPE: 'postgresdb',
		DB_POSTGRESDB_HOST: server.host,
		DB_POSTGRESDB_PORT: String(server.port),
		DB_POSTGRESDB_DATABASE: dbName,
		DB_POSTGRESDB_USER: server.user,
		DB_POSTGRESDB_PASSWORD: server.password,
		DB_POSTGRESDB_SCHEMA: 'public',
		N8N_ENCRYPTION_KEY: encryptionKey,
		N8N_PORT: String(port),
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_PROTOCOL: 'http',
		WEBHOOK_URL: `http://127.0.0.1:${port}/`,
		N8N_RUNNERS_BROKER_PORT: String(brokerPort),
		N8N_RUNNERS_BROKER_LISTEN_ADDRESS: '127.0.0.1',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_DYNAMIC_BANNERS_ENABLED: 'false',
		N8N_LICENSE_AUTO_RENEW_ENABLED: 'false',
		N8N_BLOCK_ENV_ACCESS_IN_NODE: 'false',
		N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
		N8N_SECURE_COOKIE: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_GRACEFUL_SHUTDOWN_TIMEOUT: '10',
		N8N_LOG_LEVEL: 'info',
		N8N_LOG_OUTPUT: 'console',
		N8N_PYTHON_ENABLED: 'false',
		NO_PROXY: ['127.0.0.1', 'localhost', process.env.NO_PROXY].filter(Boolean).join(','),
		no_proxy: ['127.0.0.1', 'localhost', process.env.no_proxy].filter(Boolean).join(','),
		NODE_OPTIONS: '',
		...extraEnv,
	};
	delete env.NODE_ENV;
	if (env.EXECUTIONS_MODE === 'queue') {
		env.QUEUE_BULL_PREFIX ||= `bull_${dbName}`;
		env.N8N_REDIS_KEY_PREFIX ||= `n8n_${env.QUEUE_BULL_PREFIX}`;
	}
	return env;
}

// ---------------------------------------------------------------------------------------------
// The package

/**
 * Installs the package tarball as the README tells users to: `npm install` into `nodesDir` with
 * peer dependencies not resolved at all (`--legacy-peer-deps`, as n8n's own installer strips them
 * from package.json; `--omit=peer` still reads n8n-workflow's whole tree from the registry) and no
 * install scripts. Returns the installed package's folder; throws with the log tail when npm fails
 * or the package is not there afterwards.
 */
async function installPackage({ tarball, nodesDir, logFile, note }) {
	writeFileSync(path.join(nodesDir, 'package.json'), `${JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }, null, 2)}\n`);
	note(`$ npm install ${tarball} --legacy-peer-deps --ignore-scripts`);
	const r = await run('npm', ['install', tarball, '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=warn'], {
		cwd: nodesDir,
		logFile,
		timeoutMs: 5 * 60_000,
	});
	const pkgDir = path.join(nodesDir, 'node_modules', PACKAGE_NAME);
	if (r.code !== 0) throw new Error(`Installing ${tarball} into ${nodesDir} failed:\n${tail(logFile, 30)}`);
	if (!existsSync(path.join(pkgDir, 'package.json'))) throw new Error(`${pkgDir} missing after npm install`);
	return pkgDir;
}

// ---------------------------------------------------------------------------------------------
// The CLI

/**
 * The instance's `cli(args, { timeoutMs = 5 minutes, allowFail = false })`: runs `n8n <args>` to
 * completion and resolves run()'s result plus `ms` (its wall time); throws with the log tail on a
 * non-zero exit unless `allowFail`. Each call gets a task-runner broker port of its own, so it never
 * collides with a running `n8n start` of the instance or with another CLI process.
 */
function makeCli({ rt, env, root, logFile, note }) {
	return async function cli(args, { timeoutMs = 5 * 60_000, allowFail = false } = {}) {
		note(`$ n8n ${args.join(' ')}`);
		const t0 = Date.now();
		const cliEnv = { ...env, N8N_RUNNERS_BROKER_PORT: String(await freePort()) };
		const r = await run(rt.n8nBin, args, { cwd: root, env: cliEnv, logFile, timeoutMs });
		note(`exit ${r.code}${r.timedOut ? ' (timed out)' : ''} after ${Date.now() - t0} ms`);
		r.ms = Date.now() - t0;
		if (!allowFail && r.code !== 0) {
			throw new Error(
				`n8n ${args.join(' ')} failed (${r.timedOut ? `timed out after ${timeoutMs} ms` : `exit ${r.code}`}).\n` +
					`--- ${logFile} (tail) ---\n${tail(logFile, 60)}`,
			);
		}
		return r;
	};
}

/**
 * `n8n execute --id=<id> --rawOutput` through `cli`: runs a Manual Trigger workflow once and returns
 * the parsed run, its wall time in the non-enumerable `__ms`. n8n 2.41's `execute` sometimes dies by
 * a signal while shutting down, after it printed the whole run: that printed run is the result then
 * (noted in the log). Throws with the log tail when the execution failed or printed no run.
 */
async function executeWorkflow({ cli, logFile, note }, workflowId, { timeoutMs = 3 * 60_000 } = {}) {
	const r = await cli(['execute', `--id=${workflowId}`, '--rawOutput'], { timeoutMs, allowFail: true });
	const parsed = parseRunOutput(r.stdout);
	const diedAfterPrinting = r.code === null && !r.timedOut && r.signal && parsed?.finished === true;
	if (diedAfterPrinting) note(`n8n execute exited by ${r.signal} after printing a finished run; using that run`);
	if ((r.code !== 0 && !diedAfterPrinting) || !parsed) {
		throw new Error(
			`n8n execute --id=${workflowId} failed (exit ${r.code}${r.signal ? `, signal ${r.signal}` : ''}${r.timedOut ? ', timed out' : ''}).\n` +
				`--- ${logFile} (tail) ---\n${tail(logFile, 80)}`,
		);
	}
	Object.defineProperty(parsed, '__ms', { value: r.ms, enumerable: false });
	return parsed;
}

// ---------------------------------------------------------------------------------------------
// Long-running processes

/**
 * Starts a long-running n8n process (`start`, `worker`, `webhook`) in its own process group, its
 * output appended to the instance log, and returns its handle once waitUntilReady says it is ready
 * (stopping it and throwing with the log tail when it is not). `ctx`: { rt, env, root, logFile,
 * note, procs (the instance's set of live handles) }. Options: `args`, `env` (added to the
 * instance's), `healthPort` (default N8N_PORT; none for a worker), `readyPattern` (a RegExp the new
 * log output must match; a worker's default is /worker is now ready/), `timeoutMs` (default 180 s).
 * Handle: { pid, child, command, port, url, exited(), stop({ graceMs }), kill() }.
 */
async function spawnN8nProcess(ctx, command = 'start', { args = [], env: moreEnv = {}, healthPort, readyPattern, timeoutMs = 180_000 } = {}) {
	const { rt, env, root, logFile, note, procs } = ctx;
	const procEnv = { ...env, ...moreEnv };
	const hp = healthPort ?? (command === 'worker' ? undefined : Number(procEnv.N8N_PORT));
	const pattern = readyPattern ?? (command === 'worker' ? /worker is now ready/ : undefined);
	note(`$ n8n ${command} ${args.join(' ')} (background)`);
	const logOffset = fileSize(logFile);
	const fd = openSync(logFile, 'a');
	const child = spawn(rt.n8nBin, [command, ...args], { cwd: root, env: procEnv, detached: true, stdio: ['ignore', fd, fd] });
	closeSync(fd);
	trackGroup(child.pid);
	const handle = processHandle({ child, command, port: hp, note, procs });
	procs.add(handle);
	const ready = await waitUntilReady(handle, { healthPort: hp, pattern, logFile, logOffset, timeoutMs });
	if (!ready) {
		// Whether it had exited by itself, before stop() ends it.
		const exited = handle.exited();
		await handle.stop();
		throw new Error(
			`n8n ${command} ${exited ? `exited (code ${exited.code}, signal ${exited.signal})` : `was not ready within ${timeoutMs} ms`}` +
				`${hp ? ` (port ${hp})` : ''}.\n--- ${logFile} (tail) ---\n${tail(logFile, 60)}`,
		);
	}
	return handle;
}

/**
 * The handle of a started n8n process. stop() sends SIGTERM to its process group and SIGKILL after
 * `graceMs` (default 20 s); kill() sends SIGKILL at once (a crash). Both then wait, 5 s at most each,
 * until the group is gone and the exit is seen, and remove the handle from `procs`.
 */
function processHandle({ child, command, port, note, procs }) {
	let exited = null;
	const exitPromise = new Promise((resolve) => {
		child.on('exit', (code, signal) => {
			exited = { code, signal };
			note(`n8n ${command} (pid ${child.pid}) exited: code ${code} signal ${signal}`);
			resolve(exited);
		});
	});
	const reap = async () => {
		// The whole group: the task runner and anything else n8n started.
		killGroup(child.pid, 'SIGKILL');
		for (let i = 0; i < 50 && groupAlive(child.pid); i++) await sleep(100);
		if (!exited) await within(exitPromise, 5000);
		untrackGroup(child.pid);
		procs.delete(handle);
	};
	const handle = {
		pid: child.pid,
		child,
		command,
		port,
		url: port ? `http://127.0.0.1:${port}` : undefined,
		exited: () => exited,
		/** SIGTERM to the process group, SIGKILL after `graceMs`. */
		async stop({ graceMs = 20_000 } = {}) {
			if (!exited) {
				killGroup(child.pid, 'SIGTERM');
				if ((await within(exitPromise, graceMs)) === 'timeout') note(`n8n ${command} did not stop in ${graceMs} ms; SIGKILL`);
			}
			await reap();
		},
		/** SIGKILL the whole group at once (crash simulation). */
		async kill() {
			await reap();
		},
	};
	return handle;
}

/**
 * Polls every 250 ms, for `timeoutMs` at most, until the process is ready: with a `healthPort`,
 * GET /healthz/readiness answers 200 (database connected and migrated, server fully started); with
 * a `pattern`, the log written since `logOffset` matches it (both when both are given). Resolves
 * true when ready, false when the time ran out or the process exited first.
 */
async function waitUntilReady(handle, { healthPort, pattern, logFile, logOffset, timeoutMs }) {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline && !handle.exited()) {
		let ready = true;
		if (healthPort) {
			try {
				const res = await fetch(`http://127.0.0.1:${healthPort}/healthz/readiness`, { signal: AbortSignal.timeout(2000) });
				await res.arrayBuffer().catch(() => undefined);
				ready = res.status === 200;
			} catch {
				ready = false; // not listening yet
			}
		}
		if (ready && pattern) ready = pattern.test(readFrom(logFile, logOffset));
		if (ready) return true;
		await sleep(250);
	}
	return false;
}

// ---------------------------------------------------------------------------------------------
// Over HTTP

/**
 * Waits until the n8n on `port` serves each production webhook: n8n's own activation state, asked
 * over HTTP (n8n answers /healthz before it has activated published workflows; 2.41 activates them
 * after "Editor is now accessible"). Each hook: { path, method = 'POST', form = false }. Probes with
 * GET, which never runs a POST webhook: a GET hook or form (/form/<path>) is active once it answers
 * anything but 404; a POST hook once n8n's 404 says the path is registered for another method.
 * Polls every 250 ms; throws after `timeoutMs` (default 120 s) with the log tail. Returns the
 * milliseconds waited.
 */
async function waitForWebhooks({ port, logFile, note }, hooks, { timeoutMs = 120_000 } = {}) {
	const t0 = Date.now();
	const pending = new Set(hooks.map((h) => ({ method: 'POST', form: false, ...h })));
	while (pending.size) {
		for (const h of [...pending]) {
			const url = `http://127.0.0.1:${port}/${h.form ? 'form' : 'webhook'}/${h.path}`;
			try {
				const res = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(5000), redirect: 'manual' });
				const body = await res.text().catch(() => '');
				const active = res.status !== 404 || (h.method !== 'GET' && /not registered for GET/i.test(body));
				if (active) pending.delete(h);
			} catch {
				/* not listening */
			}
		}
		if (!pending.size) break;
		if (Date.now() - t0 > timeoutMs) {
			throw new Error(
				`n8n did not activate ${[...pending].map((h) => `${h.method} ${h.path}`).join(', ')} within ${timeoutMs} ms.\n--- ${logFile} (tail) ---\n${tail(logFile, 60)}`,
			);
		}
		await sleep(250);
	}
	note(`webhooks active after ${Date.now() - t0} ms: ${hooks.map((h) => h.path).join(', ')}`);
	return Date.now() - t0;
}

// ---------------------------------------------------------------------------------------------
// The instance

/**
 * Makes a fresh n8n "installation": a user folder under a temp dir with this package installed in
 * <userFolder>/.n8n/nodes as the Community Nodes UI does, and its own Postgres database.
 *
 * Options:
 *   databaseUrl | dbUrlParts  the Postgres server (a URL or {host, port, user, password, database})
 *                             on which a database n8n_e2e_<random> is created (and dropped in cleanup)
 *   n8nDatabase               instead: an existing database name to share (queue mode: the main and
 *                             its workers use one database); not dropped
 *   tarball                   the package tarball (packPackage()); omit to run n8n without it
 *   port                      N8N_PORT (default: a free one)
 *   encryptionKey             N8N_ENCRYPTION_KEY (default: random); share it across queue processes
 *   extraEnv                  more environment variables (win over the defaults)
 *   keep                      keep the folder and the database after cleanup() (also when N8N_E2E_KEEP=1)
 */
export async function createN8nInstance(opts = {}) {
	const rt = await ensureN8n();
	const server = parseDbUrl(opts.dbUrlParts ?? opts.databaseUrl ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
	const { root, userFolder, nodesDir, logFile, note } = instanceFolders();

	const ownsDatabase = !opts.n8nDatabase;
	const dbName = opts.n8nDatabase ?? `n8n_e2e_${randomBytes(6).toString('hex')}`;
	if (ownsDatabase) {
		await createDatabase(server, dbName);
		note(`created database ${dbName}`);
	}

	const port = opts.port ?? (await freePort());
	const brokerPort = await freePort();
	const encryptionKey = opts.encryptionKey ?? randomBytes(24).toString('hex');
	const env = n8nEnvironment({ rt, server, dbName, userFolder, port, brokerPort, encryptionKey, extraEnv: opts.extraEnv });

	let installedPackage;
	if (opts.tarball) {
		try {
			installedPackage = await installPackage({ tarball: opts.tarball, nodesDir, logFile, note });
		} catch (e) {
			if (ownsDatabase) await dropDatabase(server, dbName).catch(() => undefined);
			throw e;
		}
	}

	const cli = makeCli({ rt, env, root, logFile, note });
	const procs = new Set();
	const spawnProcess = (command, options) => spawnN8nProcess({ rt, env, root, logFile, note, procs }, command, options);
	let tmpCount = 0;
	/** Writes `data` (text, or JSON of a value) to a new file of the instance folder; returns its path. */
	const tmpFile = (prefix, data) => {
		const f = path.join(root, `${prefix}-${++tmpCount}.json`);
		writeFileSync(f, typeof data === 'string' ? data : JSON.stringify(data, null, 2));
		return f;
	};

	let main;
	return {
		root,
		userFolder,
		nodesDir,
		installedPackage,
		logFile,
		port,
		brokerPort,
		encryptionKey,
		database: { ...server, database: dbName, url: partsToUrl({ ...server, database: dbName }) },
		env,
		runtime: rt,
		url: `http://127.0.0.1:${port}`,
		cli,
		logTail: (n) => tail(logFile, n),

		/** `n8n import:credentials --input=<file>`; accepts a file path, one credential or an array. */
		async importCredentials(fileOrObject) {
			const file =
				typeof fileOrObject === 'string' ? fileOrObject : tmpFile('credentials', Array.isArray(fileOrObject) ? fileOrObject : [fileOrObject]);
			return cli(['import:credentials', `--input=${file}`]);
		},

		/** `n8n import:workflow --input=<file>`; accepts a file path, one workflow or an array (each needs an id). */
		async importWorkflow(fileOrObject) {
			const file = typeof fileOrObject === 'string' ? fileOrObject : tmpFile('workflow', fileOrObject);
			return cli(['import:workflow', `--input=${file}`]);
		},

		/**
		 * Marks a workflow to be activated when n8n starts: `n8n publish:workflow --id` on 2.x,
		 * `n8n update:workflow --id --active=true` on 1.x (which has no publish). Both only write
		 * the database; a running n8n does not notice, so call this before start().
		 */
		async publishWorkflow(id) {
			return cli(N8N_MAJOR >= 2 ? ['publish:workflow', `--id=${id}`] : ['update:workflow', `--id=${id}`, '--active=true']);
		},

		/** Waits until the running n8n serves these production webhooks; see waitForWebhooks. */
		waitForWebhooks: (hooks, options) => waitForWebhooks({ port, logFile, note }, hooks, options),

		/** Runs a Manual Trigger workflow once and returns the parsed run; see executeWorkflow. */
		execute: (workflowId, options) => executeWorkflow({ cli, logFile, note }, workflowId, options),

		/** `n8n start` (main, with webhooks); waits for /healthz. */
		async start(options = {}) {
			if (main && !main.exited()) return main;
			main = await spawnProcess('start', options);
			return main;
		},

		/** Stops `n8n start` (SIGTERM to its process group, SIGKILL after the grace period). */
		async stop() {
			if (main) await main.stop();
			main = undefined;
		},

		/** Any long-running n8n command (`worker`, `webhook`) with extra env; see spawnN8nProcess. */
		spawn: spawnProcess,

		/** Stops every process, drops the database it created, removes the folder. */
		async cleanup({ keep = opts.keep || process.env.N8N_E2E_KEEP === '1' } = {}) {
			await Promise.all([...procs].map((p) => p.stop().catch(() => undefined)));
			main = undefined;
			if (ownsDatabase && !keep) {
				await dropDatabase(server, dbName).catch((e) => note(`drop database ${dbName} failed: ${e.message}`));
			}
			if (!keep) rmSync(root, { recursive: true, force: true });
		},
	};
}
