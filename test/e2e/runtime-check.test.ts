/**
 * The n8n runtime's native-module check (scripts/lib/n8n/runtime.mjs, "Installing n8n"). A runtime
 * installed by npm without install scripts has no sqlite3 binding, and n8n then refuses to activate
 * any workflow holding an AI Agent; a check that looks only for the n8n and node bins misses it.
 *
 * Asserted on the real, pinned runtime and on small runtime folders made from it:
 *   1. the real runtime passes the check, and sqlite3 is among the modules it loads;
 *   2. a runtime whose sqlite3 has no build/ fails the check, which names sqlite3;
 *   3. when the binding cannot be built, ensureN8n fails and its error names sqlite3 and its version;
 *   4. a runtime an older installer made without the binding (no recipe marker) is repaired by
 *      ensureN8n: sqlite3 is built with the runtime Node's own headers (its build/config.gypi names
 *      them and the runtime Node's module ABI), then opens a database.
 *
 * The small folders copy (never link) the packages: `npm rebuild` follows a linked package into
 * the folder it points at and would build in the shared runtime.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { harness, type Json } from '../helpers/n8nHarness';

const log = (m: string) => process.stdout.write(`[runtime-check] ${m}\n`);

let real: { dir: string; nodeBin: string };
let tmp: string;

beforeAll(async () => {
	real = await harness.ensureN8n();
	tmp = mkdtempSync(path.join(os.tmpdir(), 'n8n-runtime-check-'));
}, 60 * 60_000);

afterAll(() => {
	if (tmp && process.env.N8N_E2E_KEEP !== '1') rmSync(tmp, { recursive: true, force: true });
});

/**
 * `rel` and every package it depends on (dependencies, not optional ones), as lockfile paths,
 * resolved the way Node resolves them: the nearest node_modules/<name> upwards.
 */
function closure(packages: Record<string, Json>, rel: string, into = new Set<string>()): Set<string> {
	if (into.has(rel)) return into;
	into.add(rel);
	for (const dep of Object.keys(packages[rel]?.dependencies ?? {})) {
		let base = rel;
		for (;;) {
			const candidate = `${base}/node_modules/${dep}`;
			if (packages[candidate]) {
				closure(packages, candidate, into);
				break;
			}
			const up = base.lastIndexOf('/node_modules/');
			if (up < 0) {
				if (packages[`node_modules/${dep}`]) closure(packages, `node_modules/${dep}`, into);
				break;
			}
			base = base.slice(0, up);
		}
	}
	return into;
}

/**
 * A runtime folder that the check takes for an installed n8n of the pinned version: node_modules/.bin/node
 * links to the real runtime's Node binary, node_modules/n8n is a package.json of the wanted version,
 * node-<os>-<arch> holds the Node headers (its include/ links to the real one: read only), and
 * sqlite3 and the packages it loads and builds with (its dependency closure) are copies, sqlite3
 * without its build/. Its lockfile holds their entries from the real runtime's lockfile.
 */
function smallRuntime(name: string, { unbuildable = false } = {}): string {
	const dir = path.join(tmp, name);
	const nm = path.join(dir, 'node_modules');
	mkdirSync(path.join(nm, '.bin'), { recursive: true });
	symlinkSync(realpathSync(real.nodeBin), path.join(nm, '.bin', 'node'));
	writeFileSync(path.join(nm, '.bin', 'n8n'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
	mkdirSync(path.join(nm, 'n8n'));
	writeFileSync(path.join(nm, 'n8n', 'package.json'), JSON.stringify({ name: 'n8n', version: harness.N8N_VERSION }));

	const realHeaders = harness.runtimeNodeHeaders(real.dir);
	if (!realHeaders) throw new Error(`the real runtime ${real.dir} has no Node headers`);
	const headers = path.join(nm, path.basename(realHeaders));
	mkdirSync(headers);
	cpSync(path.join(realHeaders, 'package.json'), path.join(headers, 'package.json'));
	symlinkSync(path.join(realHeaders, 'include'), path.join(headers, 'include'));

	const realLock = JSON.parse(readFileSync(path.join(real.dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, Json> };
	const packages: Record<string, Json> = { '': { name: 'n8n-runtime', dependencies: { n8n: harness.N8N_VERSION } } };
	for (const rel of closure(realLock.packages, 'node_modules/sqlite3')) {
		packages[rel] = realLock.packages[rel];
		if (rel.startsWith('node_modules/sqlite3/')) continue; // copied with sqlite3
		cpSync(path.join(real.dir, rel), path.join(dir, rel), {
			recursive: true,
			filter: (src) => src !== path.join(real.dir, rel, 'build') && !src.startsWith(path.join(real.dir, rel, 'node_modules')),
		});
	}
	cpSync(path.join(real.dir, 'node_modules/sqlite3/node_modules'), path.join(nm, 'sqlite3', 'node_modules'), { recursive: true });
	packages['node_modules/n8n'] = { version: harness.N8N_VERSION };
	writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify({ name: 'n8n-runtime', lockfileVersion: 3, requires: true, packages }, null, 2));
	writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'n8n-runtime', private: true, allowScripts: { node: true } }, null, 2));
	if (unbuildable) {
		// A binding.gyp whose only source does not exist: node-gyp fails at once.
		writeFileSync(
			path.join(nm, 'sqlite3', 'binding.gyp'),
			JSON.stringify({ targets: [{ target_name: 'node_sqlite3', sources: ['src/this-file-does-not-exist.cc'] }] }),
		);
	}
	expect(existsSync(path.join(nm, 'sqlite3', 'build'))).toBe(false);
	return dir;
}

const gypiValue = (gypi: string, key: string) => new RegExp(`"${key}": "?([^",\\n]+)"?`).exec(gypi)?.[1];

describe('the n8n runtime check', () => {
	it('passes the real runtime, loading sqlite3 among its native modules with its own Node', () => {
		const state = harness.inspectRuntime(real.dir);
		const names = state.native.map((m) => m.name);
		log(`real runtime: ${state.native.map((m) => `${m.name}${m.optional ? ' (optional)' : ''} ${m.loads ? 'loads' : `FAILS: ${m.error}`}`).join('; ')}`);
		expect(names).toContain('sqlite3');
		expect(state.native.find((m) => m.name === 'sqlite3')).toMatchObject({ optional: false, loads: true });
		expect(state.native.find((m) => m.name === 'isolated-vm')).toMatchObject({ optional: false, loads: true });
		expect(state).toMatchObject({ installed: true, recipe: harness.RUNTIME_RECIPE, missing: [], ok: true });
	});

	it('fails a runtime whose sqlite3 has no binding, naming sqlite3', () => {
		const dir = smallRuntime('no-binding');
		const state = harness.inspectRuntime(dir);
		expect(state.installed).toBe(true);
		expect(state.ok).toBe(false);
		expect(state.missing.map((m) => m.name)).toEqual(['sqlite3']);
		expect(state.missing[0].error).toMatch(/bindings file/);
	});

	it('makes ensureN8n fail loudly, naming sqlite3, when the binding cannot be built', async () => {
		const dir = smallRuntime('unbuildable', { unbuildable: true });
		const lines: string[] = [];
		const version = JSON.parse(readFileSync(path.join(dir, 'node_modules', 'sqlite3', 'package.json'), 'utf8')).version as string;
		const named = `lacks native module that n8n needs: sqlite3 ${version} (node_modules/sqlite3): Could not locate the bindings file`;
		await expect(harness.ensureN8n({ dir, log: (m) => lines.push(m) })).rejects.toThrow(named);
		expect(lines.join('\n')).toMatch(/Repairing the n8n runtime .*building sqlite3/);
		expect(existsSync(path.join(dir, harness.RECIPE_FILE))).toBe(false);
		// The next use checks again and fails again: nothing was marked good.
		await expect(harness.ensureN8n({ dir, log: () => undefined })).rejects.toThrow(named);
	}, 10 * 60_000);

	it("repairs a runtime an older installer made without the binding: builds sqlite3 against the runtime Node's headers", async () => {
		const dir = smallRuntime('older-installer');
		expect(harness.inspectRuntime(dir)).toMatchObject({ installed: true, recipe: undefined, ok: false });
		const t0 = Date.now();
		const rt = await harness.ensureN8n({ dir, log });
		log(`repaired in ${Math.round((Date.now() - t0) / 1000)} s`);
		expect(rt.dir).toBe(dir);

		const state = harness.inspectRuntime(dir);
		expect(state).toMatchObject({ installed: true, recipe: harness.RUNTIME_RECIPE, missing: [], ok: true });
		const marker = JSON.parse(readFileSync(path.join(dir, harness.RECIPE_FILE), 'utf8'));
		expect(marker.native).toEqual([expect.objectContaining({ name: 'sqlite3', loads: true })]);

		// Built for the Node that runs n8n, from its own headers, not the machine's Node.
		const gypi = readFileSync(path.join(dir, 'node_modules', 'sqlite3', 'build', 'config.gypi'), 'utf8');
		const abi = spawnSync(real.nodeBin, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
		expect(gypiValue(gypi, 'nodedir')).toBe(harness.runtimeNodeHeaders(dir));
		expect(gypiValue(gypi, 'node_module_version')).toBe(abi);
		if (process.versions.modules !== abi) log(`the machine's Node has module ABI ${process.versions.modules}, the runtime's ${abi}`);

		// And it works: sqlite3 opens a database in the runtime's Node.
		const use = spawnSync(
			path.join(dir, 'node_modules', '.bin', 'node'),
			['-e', "const s = require('sqlite3'); new s.Database(':memory:').get('SELECT sqlite_version() AS v', (e, r) => { if (e) throw e; console.log(r.v) })"],
			{ cwd: dir, encoding: 'utf8' },
		);
		expect(use.stderr).toBe('');
		expect(use.stdout.trim()).toMatch(/^3\.\d+\.\d+$/);
	}, 20 * 60_000);
});
