/**
 * Reading the plans a connection actually executed, for the tests that pin a plan's shape
 * (test/integration/ledger/batch-plans.test.ts, test/integration/queue/batch-plans.test.ts).
 * auto_explain logs every statement the connection runs, the functions' own statements included,
 * as LOG notices (the test role is superuser on the local server and on the embedded ones).
 */
import type { Client } from 'pg';

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

/** Rows an executed plan node produced in all (rows per loop times loops), for each scan node. */
export function scanRows(plan: string): { line: string; total: number }[] {
	return plan
		.split('\n')
		.filter((l) => /Scan/.test(l) && /actual time=/.test(l))
		.map((l) => {
			const m = /rows=(\d+) loops=(\d+)\)/.exec(l);
			return { line: l.trim(), total: m ? Number(m[1]) * Number(m[2]) : 0 };
		});
}
