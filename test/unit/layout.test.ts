/**
 * The layout rules of CONTRIBUTING.md "How the code is laid out", checked by reading the files (the
 * ESLint rules in eslint.config.mjs say the same; this test also fails when the lint config loses them):
 * - src/ (the core) imports nothing of n8n and nothing of nodes/;
 * - nodes/ holds no SQL statement;
 * - a node folder imports src/, nodes/shared and its own files only, never a sibling node;
 * - one error model: every error class of src/ descends from CoreError (src/errors.ts), one
 *   input-error class, errors recognised with instanceof, never by a name string; no SQLSTATE or
 *   driver-message classification in nodes/ (src/db/driverError.ts does it);
 * - the ledger and queue cores send statements through src/db/bounds.ts only;
 * - one core file per operation: a core file calls the SQL functions of one operation only.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

function tsFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((f) => {
		const p = path.join(dir, f);
		return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
	});
}
/** Source text without comments (block and line), so prose about SQL does not count. */
function stripComments(text: string): string {
	return text
		.replace(/\/\*[\s\S]*?\*\//g, '')
		.replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}
const code = (file: string) => stripComments(readFileSync(file, 'utf8'));
const imports = (text: string) => [...text.matchAll(/\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)|require\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
const SQL = /\b(SELECT\s+[\w*"(]|INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+[\w".]+\s+SET|CREATE\s+(TABLE|FUNCTION|INDEX))/;

describe('code layout', () => {
	it('the SQL detector sees a statement and ignores prose (so the checks below can fail)', () => {
		expect(SQL.test("`SELECT * FROM ${s}.queue_claim($1)`")).toBe(true);
		expect(SQL.test("'UPDATE \"x\".operations SET status = $1'")).toBe(true);
		expect(SQL.test('Select the queue to watch')).toBe(false);
		expect(SQL.test("await client.query('SELECT 1')")).toBe(true);
		expect(stripComments("const a = 1; // SELECT 1\n/* DELETE FROM t */")).not.toMatch(SQL);
	});

	it('src/ imports nothing of n8n and nothing of nodes/', () => {
		const bad = tsFiles('src').flatMap((f) =>
			imports(code(f))
				.filter((m) => /^(n8n-workflow|n8n-core|@n8n\/)/.test(m) || /(^|\/)nodes(\/|$)/.test(m))
				.map((m) => `${f}: ${m}`),
		);
		expect(bad).toEqual([]);
	});

	it('nodes/ holds no SQL statement', () => {
		const bad = tsFiles('nodes').filter((f) => SQL.test(code(f)));
		expect(bad).toEqual([]);
	});

	it('a node imports src/, nodes/shared and its own folder only, never a sibling node', () => {
		const bad: string[] = [];
		for (const f of tsFiles('nodes')) {
			const [, node] = f.split(path.sep);
			if (node === 'shared') continue;
			for (const m of imports(code(f)).filter((x) => x.startsWith('.'))) {
				const target = path.relative('.', path.resolve(path.dirname(f), m)).split(path.sep);
				const ok = target[0] === 'src' || target[0] === 'credentials' || (target[0] === 'nodes' && (target[1] === 'shared' || target[1] === node));
				if (!ok) bad.push(`${f}: ${m}`);
			}
		}
		expect(bad).toEqual([]);
	});

	it('one door: only nodes/shared/connection.ts opens the pool, validates or applies the schema or reads the bounds', () => {
		// Every node and the trigger reach the database through getLedgerConnection / openLedgerConnection.
		const DOOR = /\b(getPool|ensureSchema|toBounds|ledgerSchema)\b/
		const bad = tsFiles('nodes')
			.filter((f) => f !== path.join('nodes', 'shared', 'connection.ts'))
			.filter((f) => DOOR.test(code(f)))
			.map((f) => `${f}: ${DOOR.exec(code(f))![1]}`);
		expect(bad).toEqual([]);
	});

	it('errors are recognised by class (instanceof), never by a name string; one input-error class', () => {
		const all = [...tsFiles('src'), ...tsFiles('nodes')];
		const BY_NAME = /\.name\s*===\s*['"]\w*Error['"]/;
		expect(BY_NAME.test("e?.name === 'LedgerBusyError'")).toBe(true);
		const byName = all.filter((f) => BY_NAME.test(code(f)));
		expect(byName).toEqual([]);
		const classes = all.flatMap((f) => [...code(f).matchAll(/class\s+(\w*InputError)\s+extends\s+(\w+)/g)].map((m) => `${m[1]} extends ${m[2]}`));
		// One class, InputError; ItemInputError (nodes/shared/items.ts) only adds a description.
		expect(classes.sort()).toEqual(['InputError extends CoreError', 'ItemInputError extends InputError']);
	});

	it('one error root: no class of src/ extends Error except CoreError (src/errors.ts)', () => {
		const direct = tsFiles('src').flatMap((f) => [...code(f).matchAll(/class\s+(\w+)\s+extends\s+(Error|TypeError|RangeError)\b/g)].map((m) => `${f}: ${m[1]}`));
		expect(direct).toEqual([path.join('src', 'errors.ts') + ': CoreError']);
	});

	it('nodes/ classify no driver error themselves (no SQLSTATE ladders: src/db/driverError.ts maps them)', () => {
		// A SQLSTATE alternation in a regular expression, e.g. /^(57014|55P03|...)$/ or /^(08|57P0|28)/.
		const LADDER = /\/\^?\((?:[0-9][0-9A-Z.]{1,4}\|)+[0-9][0-9A-Z.]{1,4}/;
		expect(LADDER.test("/^(57014|55P03|40001|40P01|53...|57P0[1-3]|25006)$/")).toBe(true);
		expect(LADDER.test("/^(08|57P0|28|3D000|ECONN)/")).toBe(true);
		expect(LADDER.test("/^(ECONN|EPIPE)/")).toBe(false);
		const bad = tsFiles('nodes').filter((f) => LADDER.test(code(f)));
		expect(bad).toEqual([]);
	});

	it('eslint.config.mjs keeps the import wall and the no-SQL rule', () => {
		const cfg = readFileSync('eslint.config.mjs', 'utf8');
		expect(cfg).toMatch(/no-restricted-imports[\s\S]*n8n-workflow[\s\S]*n8n-core/);
		expect(cfg).toMatch(/no-restricted-syntax[\s\S]*SELECT/);
	});
	it('nodes/ and credentials/ raise only n8n error types (NodeOperationError / NodeApiError), never a plain Error', () => {
		const PLAIN = /\bthrow\s+new\s+(Error|TypeError|RangeError)\s*\(/;
		expect(PLAIN.test("throw new Error('x')")).toBe(true);
		expect(PLAIN.test("throw new NodeOperationError(node, 'x')")).toBe(false);
		const bad = [...tsFiles('nodes'), ...tsFiles('credentials')].filter((f) => PLAIN.test(code(f)));
		expect(bad).toEqual([]);
	});
	it('the ledger and queue cores never send a statement on the pool they are given (db.query) but through src/db/bounds.ts', () => {
		// Every core function takes its pool or client as `db`; db.query would run without the
		// credential's statement and lock timeouts. (A client inside a bounded transaction, e.g.
		// boundedTransaction's `q`, or the LISTEN connection of src/queue/listen.ts, is not `db`.)
		const BARE = /\bdb\s*\.\s*query\b/;
		expect(BARE.test('await db.query<Row>(`x`, [])')).toBe(true);
		expect(BARE.test('await boundedQuery<Row>(db, `x`, [], bounds)')).toBe(false);
		const bad = [...tsFiles('src/queue'), ...tsFiles('src/ledger')].filter((f) => BARE.test(code(f)));
		expect(bad).toEqual([]);
	});
	it('one core file per operation: a file under src/ledger or src/queue calls one SQL function, or the several of one operation listed here', () => {
		// A call is sqlFunction(schema, 'name') or the queue's alias fn(schema, 'name').
		const calls = (text: string) => [...new Set([...text.matchAll(/\b(?:sqlFunction|fn)\(\s*\w+\s*,\s*'(\w+)'\s*\)/g)].map((m) => m[1]))].sort();
		expect(calls("`SELECT * FROM ${sqlFunction(schema, 'ops_health')}($1)`; fn(s, 'queue_claim'); fn(s, 'queue_claim')")).toEqual(['ops_health', 'queue_claim']);
		// The operations that need more than one SQL function, and why.
		const ONE_OPERATION: Record<string, string[]> = {
			// Retention: compaction or hard delete, the mode chosen per run.
			'src/ledger/admin/retention.ts': ['ops_compact_batch', 'ops_hard_delete_batch'],
			// Enqueue: the insert, and the NOTIFY on the queue's channel after it.
			'src/queue/enqueue.ts': ['queue_channel', 'queue_enqueue'],
			// Stats: one report of counts, table health and the dead tasks, in one transaction.
			'src/queue/stats.ts': ['queue_health', 'queue_list_dead', 'queue_stats'],
		};
		const files = [...tsFiles('src/ledger'), ...tsFiles('src/queue')].map((f) => f.split(path.sep).join('/'));
		const bad = files.flatMap((f) => {
			const names = calls(code(f));
			if (names.length <= 1) return [];
			const allowed = ONE_OPERATION[f];
			return allowed && names.every((n) => allowed.includes(n)) ? [] : [`${f}: ${names.join(', ')}`];
		});
		expect(bad).toEqual([]);
		// Every listed file still exists and still needs its list (an entry outliving its reason would hide a second operation).
		for (const [f, names] of Object.entries(ONE_OPERATION)) expect(calls(code(f))).toEqual(names);
	});
});
