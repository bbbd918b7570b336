/**
 * The e2e harness (scripts/lib/n8n.mjs) takes the n8n and Node versions from the environment:
 * N8N_VERSION (default the pinned 2.33.7), N8N_NODE_VERSION (default 22.23.3), N8N_INSTALL_FLAGS;
 * each n8n version gets its own runtime folder, and 1.x is recognised (it activates workflows with
 * update:workflow instead of publish:workflow). Run in a child process so the environment is fresh.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const lib = path.resolve(__dirname, '../../../scripts/lib/n8n.mjs');

function harnessConstants(env: Record<string, string>) {
	const code = `import(${JSON.stringify(lib)}).then((m) => console.log(JSON.stringify({ v: m.N8N_VERSION, node: m.NODE_VERSION, major: m.N8N_MAJOR, flags: m.INSTALL_FLAGS, dir: m.n8nRuntimeDir() })))`;
	const clean = { ...process.env };
	for (const k of ['N8N_VERSION', 'N8N_NODE_VERSION', 'N8N_INSTALL_FLAGS']) delete clean[k];
	return JSON.parse(execFileSync(process.execPath, ['-e', code], { env: { ...clean, ...env }, encoding: 'utf8' }));
}

describe('harness versions', () => {
	it('defaults to the pinned n8n 2.33.7 on Node 22.23.3', () => {
		const c = harnessConstants({});
		expect(c).toMatchObject({ v: '2.33.7', node: '22.23.3', major: 2, flags: [] });
		expect(path.basename(c.dir)).toBe('n8n-2.33.7');
	});

	it('takes another version, Node and install flags from the environment', () => {
		const c = harnessConstants({ N8N_VERSION: '1.123.81', N8N_NODE_VERSION: '22', N8N_INSTALL_FLAGS: '--ignore-scripts  --foo' });
		expect(c).toMatchObject({ v: '1.123.81', node: '22', major: 1, flags: ['--ignore-scripts', '--foo'] });
		expect(path.basename(c.dir)).toBe('n8n-1.123.81');
	});
});
