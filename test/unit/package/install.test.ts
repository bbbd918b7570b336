/**
 * The install command the README and docs/install.md give is the one that works: `npm install
 * <tarball> --legacy-peer-deps --ignore-scripts` into an empty `nodes` folder puts exactly this
 * package there and asks the registry nothing (run offline, with an empty npm cache, so a request
 * would fail the install). The e2e harness installs with the same flags, so every e2e run uses it.
 *
 * Builds first when dist/ is missing (about 15 s).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const FLAGS = ['--legacy-peer-deps', '--ignore-scripts'];
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

let tmp = '';
let tarball = '';

beforeAll(() => {
	if (!existsSync(path.join(root, 'dist', 'nodes'))) {
		execFileSync(npm, ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
	}
	tmp = mkdtempSync(path.join(os.tmpdir(), 'ol-install-'));
	const out = execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', tmp], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
	tarball = path.join(tmp, JSON.parse(out.slice(out.indexOf('[')))[0].filename);
}, 180_000);

afterAll(() => {
	if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('the documented command installs this one package, offline, with nothing of n8n-workflow', () => {
	const nodesDir = path.join(tmp, 'nodes');
	execFileSync('mkdir', ['-p', nodesDir]);
	writeFileSync(path.join(nodesDir, 'package.json'), '{"name":"installed-nodes","private":true,"dependencies":{}}\n');
	execFileSync(npm, ['install', tarball, ...FLAGS, '--offline', '--cache', path.join(tmp, 'empty-cache'), '--no-audit', '--no-fund'], {
		cwd: nodesDir,
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'pipe'],
		env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/' },
	});
	expect(readdirSync(path.join(nodesDir, 'node_modules')).filter((n) => !n.startsWith('.'))).toEqual([pkg.name]);
	const installed = path.join(nodesDir, 'node_modules', pkg.name);
	for (const f of [...pkg.n8n.nodes, ...pkg.n8n.credentials]) expect(existsSync(path.join(installed, f))).toBe(true);
}, 120_000);

test('README, docs/install.md and the e2e harness give the same command', () => {
	const command = `--legacy-peer-deps --ignore-scripts`;
	expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toContain(command);
	expect(readFileSync(path.join(root, 'docs', 'install.md'), 'utf8')).toContain(command);
	const harness = readFileSync(path.join(root, 'scripts', 'lib', 'n8n', 'instance.mjs'), 'utf8');
	expect(harness).toContain(`'install', tarball, ${FLAGS.map((f) => `'${f}'`).join(', ')}`);
	for (const text of [readFileSync(path.join(root, 'README.md'), 'utf8'), readFileSync(path.join(root, 'docs', 'install.md'), 'utf8')]) {
		// --omit=peer may be named (to say why not), never in a command line.
		expect(text).not.toMatch(/npm install [^\n`]*--omit=peer/);
	}
});
