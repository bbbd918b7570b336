/**
 * No import circles among the package's own TypeScript (src/, nodes/, credentials/): each file's
 * relative imports (value and type imports, re-exports, `import('…')` type queries) form a graph,
 * and every strongly connected component of it must be a single file. A circle means a module can
 * run before the one it imports has finished, and that two files can only be read together.
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

function tsFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) return tsFiles(p);
		return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
	});
}

const SPECIFIER = /(?:\bimport\s[^;]*?\sfrom\s*|\bexport\s[^;]*?\sfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** The package files `file` imports (relative specifiers resolved to .ts files or index.ts). */
function importsOf(file: string): string[] {
	const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
	const out: string[] = [];
	for (const m of text.matchAll(SPECIFIER)) {
		const base = resolve(dirname(file), m[1]);
		const target = [`${base}.ts`, join(base, 'index.ts')].find((p) => existsSync(p));
		if (target) out.push(target);
	}
	return out;
}

/** Strongly connected components of the graph (Tarjan). */
function components(graph: Map<string, string[]>): string[][] {
	let index = 0;
	const idx = new Map<string, number>();
	const low = new Map<string, number>();
	const stack: string[] = [];
	const on = new Set<string>();
	const out: string[][] = [];
	const visit = (v: string) => {
		idx.set(v, index);
		low.set(v, index++);
		stack.push(v);
		on.add(v);
		for (const w of graph.get(v) ?? []) {
			if (!idx.has(w)) {
				visit(w);
				low.set(v, Math.min(low.get(v)!, low.get(w)!));
			} else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
		}
		if (low.get(v) === idx.get(v)) {
			const c: string[] = [];
			let w: string;
			do {
				w = stack.pop()!;
				on.delete(w);
				c.push(w);
			} while (w !== v);
			out.push(c);
		}
	};
	for (const v of graph.keys()) if (!idx.has(v)) visit(v);
	return out;
}

const cycles = (graph: Map<string, string[]>) =>
	components(graph)
		.filter((c) => c.length > 1 || (graph.get(c[0]) ?? []).includes(c[0]))
		.map((c) => c.map((f) => relative(ROOT, f)).sort());

describe('import graph', () => {
	it('the walk finds a circle when there is one (so the check below can fail)', () => {
		const g = new Map([
			['a', ['b']],
			['b', ['c']],
			['c', ['a']],
			['d', ['a']],
		]);
		expect(cycles(g)).toEqual([['a', 'b', 'c']]);
	});

	it('reads the imports of a real file (value, type and re-export forms)', () => {
		const router = join(ROOT, 'nodes/PriorityDequeue/router.ts');
		expect(importsOf(router)).toEqual(expect.arrayContaining([join(ROOT, 'nodes/PriorityDequeue/common.ts'), join(ROOT, 'nodes/shared/items.ts')]));
	});

	it('src/, nodes/ and credentials/ have no import circles', () => {
		const files = ['src', 'nodes', 'credentials'].flatMap((d) => tsFiles(join(ROOT, d)));
		expect(files.length).toBeGreaterThan(50);
		const graph = new Map(files.map((f) => [f, importsOf(f)]));
		expect(cycles(graph)).toEqual([]);
	});
});
