/**
 * What ships: every package esbuild inlines into dist/src/vendor.js must be listed, with its
 * licence, in bundle/THIRD_PARTY.json (scripts/lib/third-party.mjs --check, which the build also
 * enforces), and the check must fail for a bundle holding an unlisted package.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const check = (extra: string[] = []) =>
	execFileSync(process.execPath, [path.join(root, 'scripts/lib/third-party.mjs'), '--check', ...extra], { cwd: root, stdio: 'pipe', encoding: 'utf8' });

describe('bundled third-party packages', () => {
	jest.setTimeout(60_000);

	it('every package in the vendor bundle is listed with its licence', () => {
		const out = check();
		for (const name of ['pg', 'pg-connection-string', 'canonicalize']) expect(out).toMatch(new RegExp(`^${name}@\\S+ \\S+$`, 'm'));
	});

	it('fails when the bundle holds a package that is not listed', () => {
		const dir = path.join(root, '.cache', 'bundle-test');
		mkdirSync(dir, { recursive: true });
		const entry = path.join(dir, `entry-${process.pid}.ts`);
		writeFileSync(entry, "import ms from 'ms';\nimport pg from 'pg';\nexport const x = [ms, pg];\n");
		try {
			expect(() => check([`--entry=${entry}`])).toThrow(/ms@\S+ \(MIT\) is bundled but not listed in bundle\/THIRD_PARTY.json/);
		} finally {
			rmSync(entry, { force: true });
		}
	});

	it('only src/vendor.ts loads third-party runtime code (everything else goes through it)', () => {
		const files: string[] = [];
		const walk = (d: string) => {
			for (const n of readdirSync(d)) {
				const f = path.join(d, n);
				if (statSync(f).isDirectory()) walk(f);
				else if (f.endsWith('.ts')) files.push(f);
			}
		};
		for (const d of ['src', 'nodes', 'credentials']) walk(path.join(root, d));
		const offenders: string[] = [];
		for (const f of files) {
			if (f.endsWith(path.join('src', 'vendor.ts'))) continue;
			for (const m of readFileSync(f, 'utf8').matchAll(/^import\s+(?!type\b)[^'"]*from\s+'([^'.][^']*)'/gm)) {
				if (!m[1].startsWith('node:') && m[1] !== 'n8n-workflow') offenders.push(`${path.relative(root, f)}: ${m[1]}`);
			}
		}
		expect(offenders).toEqual([]);
	});
});
