/**
 * Each fact once: the closed lists in src/ (src/ledger/states.ts, src/queue/states.ts) are the lists
 * the database enforces or answers with. A value added to (or dropped from) one side only fails here.
 *
 * - Columns with a CHECK list (states, lease_end, dead_reason): the CHECK constraints are read from
 *   pg_constraint.
 * - Outcomes the SQL functions answer with (no column holds them, so no CHECK can): the function's
 *   source is read from pg_proc (prosrc, the body as installed), comments stripped, and the string
 *   literals it can return in its outcome column are taken from the two forms the functions use:
 *   an assignment to the output column (`outcome := 'proceed';`, `result := CASE WHEN late THEN
 *   'recorded' ELSE 'repeated' END;`: the literals after `:=`, THEN, ELSE or `||`, never those of a
 *   condition such as `WHEN outcome = 'conflict'`), and a CASE whose value is the column (`CASE ...
 *   END AS o` in queue_settle_verdict, a SQL function). Functions that copy the outcome of another
 *   (queue_settle_miss from queue_settle_verdict; the queue settles from queue_settle_miss) add
 *   nothing of their own; each function listed below must yield at least one literal, so a body
 *   rewritten into a form the reader does not see fails instead of passing empty. Inputs a function
 *   validates with `NOT IN (...)` (Confirm's outcome, Resolve's resolution) are read from that list.
 *   Reading the source was chosen over SQL domains on the output columns: a domain would change the
 *   functions' return types (a DROP FUNCTION migration and new grants for every entry point) to
 *   check what this test checks without it.
 */
import { testDatabase } from '../helpers/db';
import {
	CONFIRM_OUTCOMES,
	CONFIRM_RESULTS,
	OPERATION_STATUSES,
	RESERVE_OUTCOMES,
	RESOLVE_RESULTS,
	SETTLE_BY_HAND_RESULTS,
} from '../../src/ledger/states';
import { RECONCILE_RESOLUTIONS } from '../../src/ledger/reconcile/lookup';
import { ARCHIVE_STATES, CANCEL_OUTCOMES, DEAD_REASONS, ENQUEUE_OUTCOMES, LEASE_ENDS, LIVE_TABLE_STATES, ON_DUPLICATE_MODES, OPERATOR_ACTIONS, PAUSE_OUTCOMES, REQUEUE_OUTCOMES, RESUME_OUTCOMES, SETTLE_BY_ID_OUTCOMES, SETTLE_OUTCOMES, TASK_STATES } from '../../src/queue/states';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_states' });
});
afterAll(async () => db?.drop());

/** The string literals of the CHECK constraint(s) that involve exactly `column` of `table`. */
async function checkedValues(table: string, column: string): Promise<string[][]> {
	const r = await db.pool.query<{ def: string }>(
		`SELECT pg_get_constraintdef(c.oid) AS def
		   FROM pg_constraint c
		   JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
		  WHERE c.contype = 'c' AND c.conrelid = format('%I.%I', $1::text, $2::text)::regclass
		    AND a.attname = $3 AND cardinality(c.conkey) = 1
		  ORDER BY c.conname`,
		[db.schema, table, column],
	);
	return r.rows.map((row) => literals(row.def));
}
const literals = (def: string) => [...def.matchAll(/'((?:[^']|'')*)'::text/g)].map((m) => m[1].replace(/''/g, "'")).sort();
const sorted = (xs: readonly string[]) => [...xs].sort();

/** The installed source of function `name` in the test schema, comments stripped. */
async function functionSource(name: string): Promise<string> {
	const r = await db.pool.query<{ src: string }>(
		`SELECT p.prosrc AS src FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2`,
		[db.schema, name],
	);
	expect(r.rows).toHaveLength(1);
	return stripSqlComments(r.rows[0].src);
}
/** SQL text without `--` comments (a `--` inside a string literal is kept). */
const stripSqlComments = (src: string) => src.replace(/('(?:[^']|'')*')|--[^\n]*/g, (m, lit: string | undefined) => lit ?? '');
const QUOTED = /'((?:[^']|'')*)'/g;
const unquote = (m: RegExpMatchArray) => m[1].replace(/''/g, "'");

/**
 * The string literals `src` can return in the output column(s) `columns`: from assignments
 * `<column> := <expression>;` (the literals right after `:=`, THEN, ELSE or `||`) and from
 * `CASE ... END AS <column>`.
 */
function returnedLiterals(src: string, columns: readonly string[]): string[] {
	const out = new Set<string>();
	for (const col of columns) {
		const valueLiterals = (expr: string) => {
			for (const m of expr.matchAll(/(?:^|:=|\bTHEN\b|\bELSE\b|\|\|)\s*'((?:[^']|'')*)'/gi)) out.add(unquote(m));
		};
		for (const m of src.matchAll(new RegExp(`(?<![\\w.])${col}\\s*:=\\s*([^;]*);`, 'g'))) valueLiterals(m[1].trim());
		for (const m of src.matchAll(new RegExp(`\\bCASE\\b((?:(?!\\bCASE\\b)[\\s\\S])*?)\\bEND\\s+AS\\s+${col}\\b`, 'gi'))) valueLiterals(m[1]);
	}
	return [...out].sort();
}
/** The union of returnedLiterals over `functions`; each function must yield at least one literal. */
async function answers(functions: readonly string[], columns: readonly string[]): Promise<string[]> {
	const all = new Set<string>();
	for (const f of functions) {
		const found = returnedLiterals(await functionSource(f), columns);
		expect({ function: f, found: found.length > 0 }).toEqual({ function: f, found: true });
		for (const v of found) all.add(v);
	}
	return [...all].sort();
}
/** The literals of `NOT IN (...)` right after `<field>, '')` (an input the function refuses otherwise). */
async function refusedUnless(fn: string, field: string): Promise<string[]> {
	const src = await functionSource(fn);
	const m = src.match(new RegExp(`e->>'${field}', ''\\)\\s+NOT IN\\s+\\(([^)]*)\\)`));
	expect(m).not.toBeNull();
	return [...m![1].matchAll(QUOTED)].map(unquote).sort();
}

describe('state lists match the database CHECK constraints', () => {
	it('the reader sees the literals of a CHECK definition (so the checks below can fail)', () => {
		expect(literals("CHECK ((status = ANY (ARRAY['b'::text, 'a'::text, 'it''s'::text])))")).toEqual(['a', 'b', "it's"]);
	});

	it('operations.status holds exactly OPERATION_STATUSES', async () => {
		expect(await checkedValues('operations', 'status')).toEqual([sorted(OPERATION_STATUSES)]);
	});

	it('queue_tasks.status holds exactly LIVE_TABLE_STATES, queue_tasks_archive.status exactly ARCHIVE_STATES', async () => {
		expect(await checkedValues('queue_tasks', 'status')).toEqual([sorted(LIVE_TABLE_STATES)]);
		expect(await checkedValues('queue_tasks_archive', 'status')).toEqual([sorted(ARCHIVE_STATES)]);
		// Together they are every task state, and nothing else.
		expect(sorted([...new Set([...LIVE_TABLE_STATES, ...ARCHIVE_STATES])])).toEqual(sorted(TASK_STATES));
	});
});

describe('lease_end and dead_reason match the database CHECK constraints', () => {
	it('queue_tasks.lease_end holds exactly LEASE_ENDS, queue_tasks.dead_reason exactly DEAD_REASONS', async () => {
		expect(await checkedValues('queue_tasks', 'lease_end')).toEqual([sorted(LEASE_ENDS)]);
		expect(await checkedValues('queue_tasks', 'dead_reason')).toEqual([sorted(DEAD_REASONS)]);
	});

	it('queue_tasks.operator_action holds exactly OPERATOR_ACTIONS', async () => {
		expect(await checkedValues('queue_tasks', 'operator_action')).toEqual([sorted(OPERATOR_ACTIONS)]);
	});
});

describe('outcome lists match what the SQL functions can answer', () => {
	it('the reader sees returned literals and ignores conditions and comments (so the checks below can fail)', () => {
		const body = `
			IF x THEN outcome := 'proceed'; status := 'reserved';
			ELSIF y THEN outcome := CASE WHEN late THEN 'recorded' ELSE 'repeated' END;
			END IF;
			lease_token := CASE WHEN outcome = 'conflict' THEN v_tok END;
			o_out := o_out || 'not_found'::text;
			SELECT CASE WHEN p IS NULL THEN 'a' WHEN q IN ('x', 'y') THEN 'b' ELSE 'c' END AS o, 'z' AS d;`;
		expect(returnedLiterals(body, ['outcome'])).toEqual(['proceed', 'recorded', 'repeated']);
		expect(returnedLiterals(body, ['o_out'])).toEqual(['not_found']);
		expect(returnedLiterals(body, ['o'])).toEqual(['a', 'b', 'c']);
		expect(returnedLiterals(stripSqlComments("-- outcome := 'old';\noutcome := 'new'; -- 'x'"), ['outcome'])).toEqual(['new']);
		expect(stripSqlComments("x := 'a--b'; -- c")).toBe("x := 'a--b'; ");
	});

	it('reserve_operations answers exactly RESERVE_OUTCOMES (busy included)', async () => {
		expect(await answers(['reserve_operations'], ['outcome'])).toEqual(sorted(RESERVE_OUTCOMES));
	});

	it('confirm_operations answers exactly CONFIRM_RESULTS and takes exactly CONFIRM_OUTCOMES', async () => {
		expect(await answers(['confirm_operations'], ['result'])).toEqual(sorted(CONFIRM_RESULTS));
		expect(await refusedUnless('confirm_operations', 'o')).toEqual(sorted(CONFIRM_OUTCOMES));
	});

	it('reconcile_resolve answers exactly RESOLVE_RESULTS and takes exactly RECONCILE_RESOLUTIONS', async () => {
		expect(await answers(['reconcile_resolve'], ['result'])).toEqual(sorted(RESOLVE_RESULTS));
		expect(await refusedUnless('reconcile_resolve', 'r')).toEqual(sorted(RECONCILE_RESOLUTIONS));
	});

	it('ops_settle_by_hand answers exactly SETTLE_BY_HAND_RESULTS', async () => {
		expect(await answers(['ops_settle_by_hand'], ['result'])).toEqual(sorted(SETTLE_BY_HAND_RESULTS));
	});

	it('the queue settles (and the verdict on a late settle) answer exactly SETTLE_OUTCOMES', async () => {
		const settles = ['queue_complete', 'queue_fail', 'queue_extend_lease', 'queue_release'];
		expect(await answers([...settles, 'queue_settle_verdict'], ['outcome', 'o'])).toEqual(sorted(SETTLE_OUTCOMES));
		// queue_settle_miss only passes the verdict on.
		expect(returnedLiterals(await functionSource('queue_settle_miss'), ['outcome'])).toEqual([]);
	});

	it('queue_cancel answers exactly CANCEL_OUTCOMES', async () => {
		expect(await answers(['queue_cancel'], ['outcome'])).toEqual(sorted(CANCEL_OUTCOMES));
	});

	it('queue_enqueue answers exactly ENQUEUE_OUTCOMES and takes exactly ON_DUPLICATE_MODES', async () => {
		expect(await answers(['queue_enqueue'], ['outcome'])).toEqual(sorted(ENQUEUE_OUTCOMES));
		const src = await functionSource('queue_enqueue');
		const m = src.match(/coalesce\(e->>'r', 'keep'\) NOT IN \(([^)]*)\)/);
		expect(m).not.toBeNull();
		expect([...(m as RegExpMatchArray)[1].matchAll(QUOTED)].map(unquote).sort()).toEqual(sorted(ON_DUPLICATE_MODES));
	});

	it('queue_pause answers exactly PAUSE_OUTCOMES, queue_resume exactly RESUME_OUTCOMES', async () => {
		expect(await answers(['queue_pause'], ['outcome'])).toEqual(sorted(PAUSE_OUTCOMES));
		expect(await answers(['queue_resume'], ['outcome'])).toEqual(sorted(RESUME_OUTCOMES));
	});

	it('queue_settle_by_id answers exactly SETTLE_BY_ID_OUTCOMES', async () => {
		expect(await answers(['queue_settle_by_id'], ['outcome'])).toEqual(sorted(SETTLE_BY_ID_OUTCOMES));
	});

	it('queue_requeue_dead answers exactly REQUEUE_OUTCOMES', async () => {
		expect(await answers(['queue_requeue_dead'], ['outcome', 'o_out'])).toEqual(sorted(REQUEUE_OUTCOMES));
	});
});
