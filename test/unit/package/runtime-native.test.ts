/**
 * Which packages of an n8n runtime the harness builds and checks as native modules
 * (scripts/lib/n8n.mjs nativeModules): those with an install script and a binding.gyp, read from the
 * runtime's lockfile, with npm's `optional` flag. The real runtime is tested in test/e2e/runtime-check.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { harness } from '../../helpers/n8nHarness';

let dir: string;

function pkg(rel: string, files: string[] = []) {
	mkdirSync(path.join(dir, rel), { recursive: true });
	writeFileSync(path.join(dir, rel, 'package.json'), JSON.stringify({ name: path.basename(rel), version: '1.0.0' }));
	for (const f of files) {
		mkdirSync(path.dirname(path.join(dir, rel, f)), { recursive: true });
		writeFileSync(path.join(dir, rel, f), '{}');
	}
}

beforeAll(() => {
	dir = mkdtempSync(path.join(os.tmpdir(), 'runtime-native-'));
	pkg('node_modules/sqlite3', ['binding.gyp']);
	pkg('node_modules/ssh2', ['lib/protocol/crypto/binding.gyp']);
	pkg('node_modules/cpu-features', ['binding.gyp']);
	pkg('node_modules/@sentry/node-cpu-profiler', ['binding.gyp']);
	pkg('node_modules/a/node_modules/sqlite3', ['binding.gyp']);
	pkg('node_modules/protobufjs', ['scripts/postinstall.js']);
	pkg('node_modules/only-tests', ['test/binding.gyp', 'node_modules/x/binding.gyp']);
	pkg('node_modules/no-script', ['binding.gyp']);
	const entry = (extra: object = {}) => ({ version: '1.0.0', hasInstallScript: true, ...extra });
	writeFileSync(
		path.join(dir, 'package-lock.json'),
		JSON.stringify({
			lockfileVersion: 3,
			packages: {
				'': { name: 'n8n-runtime' },
				'node_modules/sqlite3': entry(),
				'node_modules/ssh2': entry(),
				'node_modules/cpu-features': entry({ optional: true }),
				'node_modules/@sentry/node-cpu-profiler': entry(),
				'node_modules/a/node_modules/sqlite3': entry({ version: '2.0.0' }),
				'node_modules/protobufjs': entry(),
				'node_modules/only-tests': entry(),
				'node_modules/no-script': { version: '1.0.0' },
				'node_modules/linked': { resolved: '../elsewhere', link: true },
				'node_modules/not-installed': entry(),
			},
		}),
	);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('nativeModules', () => {
	it('lists the packages with an install script and a binding.gyp, with npm’s optional flag', () => {
		expect(harness.nativeModules(dir).map(({ name, version, path: rel, optional }) => ({ name, version, rel, optional }))).toEqual([
			{ name: 'sqlite3', version: '1.0.0', rel: 'node_modules/sqlite3', optional: false },
			{ name: 'ssh2', version: '1.0.0', rel: 'node_modules/ssh2', optional: false },
			{ name: 'cpu-features', version: '1.0.0', rel: 'node_modules/cpu-features', optional: true },
			{ name: '@sentry/node-cpu-profiler', version: '1.0.0', rel: 'node_modules/@sentry/node-cpu-profiler', optional: false },
			{ name: 'sqlite3', version: '2.0.0', rel: 'node_modules/a/node_modules/sqlite3', optional: false },
		]);
		expect(harness.nativeModules(dir)[0].dir).toBe(path.join(dir, 'node_modules/sqlite3'));
	});

	it('lets n8n run without some native modules, each with its reason, but never without sqlite3 or isolated-vm', () => {
		const without = harness.NATIVE_MODULES_N8N_RUNS_WITHOUT;
		expect(Object.keys(without)).not.toContain('sqlite3');
		expect(Object.keys(without)).not.toContain('isolated-vm');
		for (const why of Object.values(without)) expect(why.length).toBeGreaterThan(20);
	});

	it('finds nothing in a folder without a lockfile', () => {
		expect(harness.nativeModules(path.join(dir, 'node_modules'))).toEqual([]);
	});
});
