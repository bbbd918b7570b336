/**
 * What `npm pack` ships (the tarball users install into ~/.n8n/nodes): read from
 * `npm pack --dry-run --json`, which lists the files without writing a tarball.
 *
 * Required: package.json, README.md, LICENSE, every node and credential file package.json's `n8n`
 * section names, each node's codex (.node.json), every icon a description or credential refers to
 * (`file:….svg`, resolved from the file that names it), the vendor bundle and its notices, and the
 * whole schema (migrations, functions, apply.sql, version_table.sql, security scripts).
 * Forbidden: a second package.json (dist/package.json), the docs and benchmark images, TypeScript
 * sources, build info, tests. The README must link docs/ and workflows/ absolutely (they are not in
 * the tarball, so a relative link breaks on npmjs.com and in ~/.n8n/nodes).
 *
 * Builds first when dist/ is missing (about 15 s); a stale dist/ is listed as it is.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function walk(dir: string, out: string[] = []): string[] {
	for (const n of readdirSync(dir)) {
		const f = path.join(dir, n);
		if (statSync(f).isDirectory()) walk(f, out);
		else out.push(f);
	}
	return out;
}

const rel = (f: string) => path.relative(root, f).split(path.sep).join('/');

let files: string[] = [];

beforeAll(() => {
	if (!existsSync(path.join(root, 'dist', 'nodes'))) {
		execFileSync(npm, ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
	}
	const out = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
	const info = JSON.parse(out.slice(out.indexOf('[')));
	files = (info[0].files as Array<{ path: string }>).map((f) => f.path).sort();
}, 180_000);

describe('npm pack contents', () => {
	it('holds the package files, licence and notices', () => {
		for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/THIRD_PARTY_NOTICES.md', 'dist/src/vendor.js']) expect(files).toContain(f);
	});

	it("holds every node and credential package.json's n8n section names, with each node's codex file", () => {
		const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
		const entries: string[] = [...pkg.n8n.nodes, ...pkg.n8n.credentials];
		expect(pkg.n8n.nodes.length).toBeGreaterThanOrEqual(6);
		for (const f of entries) expect(files).toContain(f);
		for (const node of pkg.n8n.nodes as string[]) expect(files).toContain(node.replace(/\.js$/, '.json'));
	});

	it('holds every icon that a node description or the credential refers to', () => {
		const refs: string[] = [];
		for (const dir of ['nodes', 'credentials']) {
			for (const f of walk(path.join(root, dir)).filter((x) => x.endsWith('.ts'))) {
				for (const m of readFileSync(f, 'utf8').matchAll(/'file:([^']+\.(?:svg|png))'/g)) {
					refs.push(`dist/${rel(path.resolve(path.dirname(f), m[1]))}`);
				}
			}
		}
		expect(refs.length).toBeGreaterThanOrEqual(7);
		for (const r of new Set(refs)) expect(files).toContain(r);
	});

	it('holds the whole schema, security scripts included', () => {
		const schema = walk(path.join(root, 'schema'))
			.filter((f) => f.endsWith('.sql'))
			.map((f) => `dist/${rel(f)}`);
		expect(schema).toEqual(expect.arrayContaining(['dist/schema/apply.sql', 'dist/schema/security/least_privilege_role.sql']));
		expect(schema.filter((f) => f.includes('/migrations/')).length).toBeGreaterThanOrEqual(8);
		for (const f of schema) expect(files).toContain(f);
	});

	it('holds no second package.json, no docs or benchmark images, no sources, build info or tests', () => {
		const forbidden = files.filter(
			(f) =>
				f === 'dist/package.json' ||
				/^dist\/(docs|bench|test|workflows)\//.test(f) ||
				/^(docs|bench|test|src|nodes|credentials|scripts|workflows|schema)\//.test(f) ||
				(/\.ts$/.test(f) && !/\.d\.ts$/.test(f)) ||
				/\.tsbuildinfo$/.test(f) ||
				/\.test\.js$/.test(f),
		);
		expect(forbidden).toEqual([]);
		// Images only next to the nodes and the credential that use them.
		expect(files.filter((f) => /\.(svg|png)$/.test(f) && !/^dist\/(nodes|credentials)\//.test(f))).toEqual([]);
	});
});

describe('README links', () => {
	it('points at docs/ and workflows/ with absolute GitHub URLs (they are not in the tarball)', () => {
		const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
		const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
		const repo = String(pkg.repository.url).replace(/^git\+/, '').replace(/\.git$/, '');
		const relative = [...readme.matchAll(/\]\((?!https?:|#|mailto:)([^)\s]+)\)/g)].map((m) => m[1]);
		expect(relative).toEqual([]);
		const absolute = [...readme.matchAll(/\]\((https:\/\/[^)\s]+)\)/g)].map((m) => m[1]);
		expect(absolute.some((u) => u.startsWith(`${repo}/blob/main/docs/`))).toBe(true);
	});
});
