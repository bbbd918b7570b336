/**
 * What ships: every package esbuild inlines into dist/src/vendor.js must be listed, with its
 * licence, in bundle/THIRD_PARTY.json (scripts/lib/third-party.mjs --check, which the build also
 * enforces), and the check must fail for a bundle holding an unlisted package.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
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
});
