/**
 * The README is the page a builder reads first (npmjs.com, GitHub, n8n's package page), so it stays
 * short and every link, command and node reference in it must hold:
 * - at most 12 KiB (n8n's community node template is about 1.3 KB; the full reference lives in docs/);
 * - every link into this repository (GitHub blob/raw URLs, `#anchors`) names a file that exists and,
 *   with an anchor, a heading of that file; the same for the relative links of docs/ and
 *   CONTRIBUTING.md/CHANGELOG.md/BENCHMARKS.md, the codex files' documentation URLs and the credential's;
 * - every `npm run <script>` it shows is a script of package.json, and the two developer commands
 *   stand as CI (.ci/run) and the guide use them;
 * - every node folder in nodes/ has its reference page docs/nodes/<Node>.md, linked from the README;
 * - every "README, "<section>"" that the code or the schema cites (error messages among them) is a
 *   heading of the README.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const read = (rel: string) => readFileSync(path.join(root, rel), 'utf8');
const pkg = JSON.parse(read('package.json'));
const REPO = String(pkg.repository.url).replace(/^git\+/, '').replace(/\.git$/, '');
const RAW = REPO.replace('https://github.com/', 'https://raw.githubusercontent.com/') + '/main/';
const BLOB = `${REPO}/blob/main/`;
const README = read('README.md');
const MAX_README_BYTES = 12 * 1024;

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
	return heading
		.trim()
		.toLowerCase()
		.replace(/[^\p{L}\p{N}\s_-]/gu, '')
		.replace(/\s/g, '-');
}

/** The anchors of a markdown file's headings (outside code fences). */
function anchors(text: string): Set<string> {
	const out = new Set<string>();
	let fence = false;
	for (const line of text.split('\n')) {
		if (/^\s*```/.test(line)) fence = !fence;
		else if (!fence) {
			const m = /^#{1,6}\s+(.*)$/.exec(line);
			if (m) out.add(slug(m[1]));
		}
	}
	return out;
}

/** Link targets of a markdown text, code spans and fences left out. */
function links(text: string): string[] {
	const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
	return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

/**
 * What is wrong with one link found in `fromFile` (a path from the root), or null. External links
 * (other hosts) are not fetched: the tests run offline.
 */
function brokenLink(fromFile: string, target: string): string | null {
	let rel: string;
	if (target.startsWith(BLOB)) rel = target.slice(BLOB.length);
	else if (target.startsWith(RAW)) rel = target.slice(RAW.length);
	else if (target.startsWith(REPO + '#')) rel = 'README.md' + target.slice(REPO.length);
	else if (target.startsWith(REPO)) return `a repository URL this test cannot check: ${target}`;
	else if (/^[a-z]+:/.test(target)) return null;
	else if (target.startsWith('#')) rel = fromFile + target;
	else rel = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), target));
	const [file, anchor] = rel.split('#');
	const abs = path.join(root, file);
	if (!existsSync(abs)) return `${target}: ${file} does not exist`;
	if (anchor !== undefined && file.endsWith('.md') && !anchors(read(file)).has(anchor)) return `${target}: ${file} has no heading #${anchor}`;
	return null;
}

const nodeFolders = readdirSync(path.join(root, 'nodes')).filter((d) => d !== 'shared' && statSync(path.join(root, 'nodes', d)).isDirectory());

describe('README', () => {
	it(`is at most ${MAX_README_BYTES} bytes`, () => {
		expect(Buffer.byteLength(README, 'utf8')).toBeLessThanOrEqual(MAX_README_BYTES);
	});

	it('the link check sees a missing file, a missing heading and a good link (so it can fail)', () => {
		expect(brokenLink('README.md', `${BLOB}docs/no-such-page.md`)).toMatch(/does not exist/);
		expect(brokenLink('README.md', `${BLOB}docs/install.md#no-such-heading`)).toMatch(/no heading/);
		expect(brokenLink('README.md', '#no-such-heading')).toMatch(/no heading/);
		expect(brokenLink('README.md', `${BLOB}docs/install.md#queue-mode`)).toBeNull();
		expect(slug("n8n's Retry, the editor and crashes")).toBe('n8ns-retry-the-editor-and-crashes');
	});

	it('every link into the repository resolves to a file and heading that exist', () => {
		const all = links(README);
		expect(all.length).toBeGreaterThan(20);
		expect(all.map((l) => brokenLink('README.md', l)).filter(Boolean)).toEqual([]);
	});

	it('every image it shows is one of docs/screenshots or docs/', () => {
		const images = [...README.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
		expect(images.length).toBeGreaterThanOrEqual(2);
		for (const img of images) {
			expect(img.startsWith(`${RAW}docs/`)).toBe(true);
			expect(existsSync(path.join(root, img.slice(RAW.length)))).toBe(true);
		}
	});

	it('every npm script it shows exists, and the two developer commands stand as CI uses them', () => {
		const runs = [...README.matchAll(/npm run ([a-z][\w:-]*)/g)].map((m) => m[1]);
		expect(runs).toEqual(expect.arrayContaining(['demo', 'build']));
		for (const r of runs) expect(Object.keys(pkg.scripts)).toContain(r);
		expect(README).toContain('npm ci && npm run demo   # the main job');
		expect(README).toMatch(/^npm test {17}# all tests/m);
		expect(pkg.scripts.test).toBe('node scripts/test.mjs');
		expect(read('.ci/run')).toMatch(/run_tests "all projects, the machine's Postgres" npm test\n/);
	});

	it('every node folder has its docs/nodes page, and the README links each one', () => {
		expect(nodeFolders.length).toBe(pkg.n8n.nodes.length);
		for (const n of nodeFolders) {
			expect(existsSync(path.join(root, 'docs', 'nodes', `${n}.md`))).toBe(true);
			expect(README).toContain(`(${BLOB}docs/nodes/${n}.md)`);
		}
	});

	it('every README section the code, the schema or the docs cite is a heading of it', () => {
		const headings = anchors(README);
		const cited: string[] = [];
		const scan = (dir: string) => {
			for (const f of readdirSync(path.join(root, dir))) {
				const rel = `${dir}/${f}`;
				if (statSync(path.join(root, rel)).isDirectory()) scan(rel);
				else if (/\.(ts|sql|md|mjs)$/.test(f)) {
					for (const m of read(rel).matchAll(/README,? "([^"]+)"/g)) cited.push(m[1]);
				}
			}
		};
		for (const d of ['src', 'nodes', 'credentials', 'schema', 'docs', 'scripts', 'test/e2e', 'test/engine', 'test/integration']) scan(d);
		for (const f of ['CONTRIBUTING.md', 'BENCHMARKS.md']) for (const m of read(f).matchAll(/README,? "([^"]+)"/g)) cited.push(m[1]);
		expect(cited).toContain('Applying the schema');
		expect([...new Set(cited)].filter((c) => !headings.has(slug(c)))).toEqual([]);
	});
});

describe('docs, CONTRIBUTING, CHANGELOG and BENCHMARKS links', () => {
	const mdFiles = (dir: string): string[] =>
		readdirSync(path.join(root, dir)).flatMap((f) => {
			const rel = `${dir}/${f}`;
			return statSync(path.join(root, rel)).isDirectory() ? mdFiles(rel) : f.endsWith('.md') ? [rel] : [];
		});
	const files = [...mdFiles('docs'), 'CONTRIBUTING.md', 'CHANGELOG.md', 'BENCHMARKS.md'];

	it.each(files)('%s: every link into the repository resolves', (file) => {
		expect(links(read(file)).map((l) => brokenLink(file, l)).filter(Boolean)).toEqual([]);
	});

	it("the codex files' and the credential's documentation URLs resolve", () => {
		const urls = nodeFolders.map((n) => JSON.parse(read(`nodes/${n}/${n}.node.json`)) as { resources: { primaryDocumentation: Array<{ url: string }>; credentialDocumentation?: Array<{ url: string }> } });
		for (const [i, codex] of urls.entries()) {
			expect(codex.resources.primaryDocumentation[0].url).toBe(`${BLOB}docs/nodes/${nodeFolders[i]}.md`);
			for (const d of [...codex.resources.primaryDocumentation, ...(codex.resources.credentialDocumentation ?? [])]) expect(brokenLink('README.md', d.url)).toBeNull();
		}
		const cred = /documentationUrl = '([^']+)'/.exec(read('credentials/OperationLedgerPostgresApi.credentials.ts'));
		expect(cred).not.toBeNull();
		expect(brokenLink('README.md', cred![1])).toBeNull();
	});
});
