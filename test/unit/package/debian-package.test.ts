/**
 * scripts/lib/debian-package.cjs: a program that is there is found without running apt-get (a
 * candidate path first, then PATH), so the hardening and editor tests only install what is missing.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lib = require('../../../scripts/lib/debian-package.cjs') as {
	findProgram(name: string, candidates?: string[]): string | undefined;
	ensureDebianProgram(o: { name: string; pkg?: string; candidates?: string[]; log?: (m: string) => void }): string;
};

test('a candidate path that exists wins over PATH', () => {
	expect(lib.findProgram('sh', [process.execPath])).toBe(process.execPath);
});

test('a program on PATH is found; one that is nowhere is not', () => {
	expect(lib.findProgram('sh')).toMatch(/\/sh$/);
	expect(lib.findProgram('no-such-program-3f9a', ['/nonexistent/no-such-program-3f9a'])).toBeUndefined();
});

test('ensureDebianProgram returns a present program without installing anything', () => {
	const logged: string[] = [];
	expect(lib.ensureDebianProgram({ name: 'sh', pkg: 'no-such-package-3f9a', log: (m) => logged.push(m) })).toMatch(/\/sh$/);
	expect(logged).toEqual([]);
});
