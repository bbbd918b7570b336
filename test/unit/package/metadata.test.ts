/**
 * package.json as npm publishes it: fields npm would rewrite on publish (it warns, and the
 * registry shows its form, not ours) are already in npm's form, and the description promises what
 * the README does (at most once per operation key plus reconcile, not "exactly-once", which no
 * ledger in front of an outside system can give).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

test("repository.url is in the form npm publish normalises to (git+https://…/<repo>.git)", () => {
	expect(pkg.repository.type).toBe('git');
	expect(pkg.repository.url).toMatch(/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/);
});

test('the description and the README opening promise at most once plus reconcile, not exactly-once', () => {
	const opening = readme.slice(0, readme.indexOf('\n## '));
	for (const text of [pkg.description as string, opening]) {
		expect(text).not.toMatch(/exactly[- ]once/i);
		expect(text).toMatch(/at most once/i);
		expect(text).toMatch(/reconcile|unknown/i);
	}
});
