/**
 * The ratchet on fixed waits: tests wait for a state with test/helpers/wait.ts `waitFor`
 * or move the test clocks (ledger_now() / queue_now()); a fixed sleep is left only where real time
 * is the thing under test (a rate, a fault schedule, a partition's length, simulated work). This
 * scans test/**\/*.ts for fixed waits (`sleep(` calls, `setTimeout` inside a `new Promise`, the
 * promise form `setTimeout(<ms>)`), fails when there are more than MAX_FIXED_WAITS, and requires
 * each one to say why on its line or the line above (`fixed on purpose:` / `real time on purpose:`).
 * Not counted: SQL pg_sleep, jest.setTimeout, a `const sleep = ...` definition (its calls are
 * counted), and waitFor's own poll interval in test/helpers/wait.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Lower this when a fixed wait is removed; never raise it to make room for a new one. */
const MAX_FIXED_WAITS = 8;

/**
 * Fixed waits not replaced yet, per file: accepted without a reason comment up to this many. Empty:
 * every fixed wait left says why. Never add an entry.
 */
const NOT_YET_REPLACED: Record<string, number> = {};

const root = path.resolve(__dirname, '../..');
const testDir = path.join(root, 'test');
const REASON = /fixed on purpose:|real time on purpose:/;
const SELF = 'test/unit/fixed-waits.test.ts';

export interface FixedWait {
	/** test/…/file.ts:<line> (1-based). */
	at: string;
	line: string;
	/** The line or the one above carries a REASON comment. */
	explained: boolean;
}

/** True when `line` (code, comments included) holds a fixed wait as defined in the header. */
export function isFixedWait(line: string): boolean {
	if (/\bconst\s+sleep\s*=/.test(line)) return false; // a definition; each call is counted
	const code = line.replace(/\/\/.*$/, '');
	if (/(?<![\w.$])sleep\s*\(/.test(code)) return true; // not pg_sleep, not x.sleep
	if (/new Promise\b.*(?<![\w.$])setTimeout\s*\(/.test(code)) return true; // a delay promise
	if (/(?<![\w.$])setTimeout\s*\(\s*[\d_A-Z]/.test(code)) return true; // timers/promises setTimeout(ms)
	return false;
}

/** Scans the text of one file; `rel` is its path from the repository root. */
export function scanText(rel: string, text: string): FixedWait[] {
	const lines = text.split('\n');
	const found: FixedWait[] = [];
	/** The line itself, or the block of // comment lines right above it, gives the reason. */
	const explained = (i: number) => {
		if (REASON.test(lines[i])) return true;
		for (let j = i - 1; j >= 0 && /^\s*\/\//.test(lines[j]); j--) if (REASON.test(lines[j])) return true;
		return false;
	};
	lines.forEach((line, i) => {
		if (!isFixedWait(line)) return;
		if (rel === 'test/helpers/wait.ts' && /setTimeout\(r, intervalMs\)/.test(line)) return; // waitFor's poll interval
		found.push({ at: `${rel}:${i + 1}`, line: line.trim(), explained: explained(i) });
	});
	return found;
}

function tsFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
		const p = path.join(dir, e.name);
		if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : tsFiles(p);
		return e.name.endsWith('.ts') ? [p] : [];
	});
}

export function scanTests(): FixedWait[] {
	return tsFiles(testDir)
		.map((f) => path.relative(root, f).split(path.sep).join('/'))
		.filter((rel) => rel !== SELF) // its own examples below
		.flatMap((rel) => scanText(rel, readFileSync(path.join(root, rel), 'utf8')));
}

describe('fixed waits in test/', () => {
	const found = scanTests();

	it(`at most ${MAX_FIXED_WAITS} fixed waits are left`, () => {
		const list = found.map((w) => `${w.at}  ${w.line}`).join('\n');
		if (found.length > MAX_FIXED_WAITS) throw new Error(`${found.length} fixed waits, at most ${MAX_FIXED_WAITS}; wait for the state with waitFor or move the test clock instead:\n${list}`);
		// Fewer is good news: lower MAX_FIXED_WAITS to the new count so the ratchet holds there.
		if (found.length < MAX_FIXED_WAITS) throw new Error(`${found.length} fixed waits now: lower MAX_FIXED_WAITS from ${MAX_FIXED_WAITS} to ${found.length}`);
		expect(found.length).toBe(MAX_FIXED_WAITS);
	});

	it('each one says why on its line or in the comment right above (fixed on purpose: / real time on purpose:)', () => {
		const unexplained = found.filter((w) => !w.explained);
		const perFile = new Map<string, FixedWait[]>();
		for (const w of unexplained) perFile.set(w.at.replace(/:\d+$/, ''), [...(perFile.get(w.at.replace(/:\d+$/, '')) ?? []), w]);
		const over = [...perFile].filter(([file, ws]) => ws.length > (NOT_YET_REPLACED[file] ?? 0)).flatMap(([, ws]) => ws.map((w) => `${w.at}  ${w.line}`));
		expect(over).toEqual([]);
	});

	it('the not-yet-replaced counts are not above what is there (lower them as waits go)', () => {
		const stale = Object.entries(NOT_YET_REPLACED).filter(([file, n]) => found.filter((w) => !w.explained && w.at.startsWith(`${file}:`)).length < n);
		expect(stale).toEqual([]);
	});

	it('the scanner finds the forms of a fixed wait and skips what is not one', () => {
		const fixed = [
			'await sleep(500);',
			'await new Promise((r) => setTimeout(r, 2));',
			"consumer: () => new Promise((r) => setTimeout(() => r('success'), 200)),",
			'await setTimeout(1000); // from node:timers/promises',
			'return sleep(SETTLE_MS);',
		];
		const notFixed = [
			"await db.pool.query('SELECT pg_sleep(1)');",
			'jest.setTimeout(60_000);',
			'export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));',
			's.setTimeout(2000, () => done(false));',
			'await new Promise((r) => setImmediate(r));',
			'// we used to sleep(500) here',
			'await waitFor(() => done, { what: "done" });',
		];
		for (const l of fixed) expect([l, isFixedWait(l)]).toEqual([l, true]);
		for (const l of notFixed) expect([l, isFixedWait(l)]).toEqual([l, false]);
		const s = scanText('test/x.test.ts', ['a();', '// fixed on purpose: the rate under test', '// (second line)', 'await sleep(20);', 'await sleep(30);'].join('\n'));
		expect(s).toEqual([
			{ at: 'test/x.test.ts:4', line: 'await sleep(20);', explained: true },
			{ at: 'test/x.test.ts:5', line: 'await sleep(30);', explained: false },
		]);
		// waitFor's poll interval is not counted, a sleep elsewhere in wait.ts is.
		expect(scanText('test/helpers/wait.ts', '\t\tawait new Promise((r) => setTimeout(r, intervalMs));\n\tawait sleep(5);')).toHaveLength(1);
	});
});
