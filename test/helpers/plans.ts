/**
 * Reading the plans a connection actually executed, for the tests that pin a plan's shape
 * (test/integration/ledger/batch-plans.test.ts, test/integration/queue/batch-plans.test.ts).
 * auto_explain logs every statement the connection runs, the functions' own statements included,
 * as LOG notices (the test role is superuser on the local server and on the embedded ones).
 */
import { Pool, type Client } from 'pg';

/**
 * Loads auto_explain on `c` (every statement, nested ones included, with actual row counts) and
 * returns the array its plans are pushed into, one text per statement; clear it (`length = 0`)
 * before the call whose plans a test reads.
 */
export async function watchExecutedPlans(c: Client): Promise<string[]> {
	const logs: string[] = [];
	c.on('notice', (n) => {
		if (n.severity === 'LOG') logs.push(n.message ?? '');
	});
	await c.query("LOAD 'auto_explain'");
	await c.query(
		'SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; ' +
			'SET auto_explain.log_analyze = on; SET client_min_messages = log',
	);
	return logs;
}

/**
 * For each scan node of an executed plan: the rows it produced in all (rows per loop times loops),
 * and the rows it read, those its filters then removed included ("Rows Removed by Filter" and
 * "by Index Recheck" are per-loop averages too).
 */
export function scanRows(plan: string): { line: string; total: number; read: number }[] {
	const lines = plan.split('\n');
	const out: { line: string; total: number; read: number }[] = [];
	lines.forEach((l, n) => {
		if (!/Scan/.test(l) || !/actual time=/.test(l)) return;
		const m = /rows=(\d+) loops=(\d+)\)/.exec(l);
		const rows = m ? Number(m[1]) : 0;
		const loops = m ? Number(m[2]) : 0;
		let removed = 0;
		// The node's own detail lines follow it, up to the next node ("->").
		for (let k = n + 1; k < lines.length && !/->|actual time=/.test(lines[k]); k++) {
			const r = /Rows Removed by (?:Filter|Index Recheck): (\d+)/.exec(lines[k]);
			if (r) removed += Number(r[1]);
		}
		out.push({ line: l.trim(), total: rows * loops, read: (rows + removed) * loops });
	});
	return out;
}

/**
 * The scans in `plans` on a table (or index) whose name `on` matches that read more than `max` rows,
 * each as "<rows> rows: <plan line>" and the start of its plan: an empty list is the pass. Also
 * returns how many such scans there were at all, so a test can tell an empty list from no scans.
 */
export function wideScans(plans: string[], on: RegExp, max: number): { scans: number; wide: string[] } {
	const scans = plans.flatMap((plan) => scanRows(plan).filter((x) => on.test(x.line)).map((x) => ({ ...x, plan })));
	return { scans: scans.length, wide: scans.filter((x) => x.read > max).map((x) => `${x.read} rows: ${x.line}\n${x.plan.slice(0, 600)}`) };
}

/**
 * A pg Pool of one connection that is never closed while idle (pg closes an idle one after 10 s
 * by default, and a test of the plans that connection kept would then run on fresh ones), and the
 * backend pid it is on, so that a test can check it is still the connection that made its plans.
 */
export async function oneConnection(connectionString: string): Promise<{ pool: Pool; pid: () => Promise<number> }> {
	const pool = new Pool({ connectionString, max: 1, idleTimeoutMillis: 0 });
	return { pool, pid: async () => (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid };
}
