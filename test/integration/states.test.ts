/**
 * Each fact once: the closed lists of states in src/ (src/ledger/states.ts, src/queue/states.ts)
 * are the lists the database enforces. Reads the CHECK constraints on the status columns from
 * pg_constraint; a state added to (or dropped from) one side only fails here.
 */
import { testDatabase } from '../helpers/db';
import { OPERATION_STATUSES } from '../../src/ledger/states';
import { ARCHIVE_STATES, LIVE_TABLE_STATES, TASK_STATES } from '../../src/queue/states';

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
