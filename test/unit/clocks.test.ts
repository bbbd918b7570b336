/**
 * The ledger and the queue each read time through one clock function (ledger_now(), queue_now()),
 * never now() or the other clock functions directly, so a test that moves the clock moves every
 * comparison and every stored time. Checked by reading the function files (comments stripped).
 * Allowed, each for its own reason:
 * - the clock functions themselves (their body is now());
 * - queue_now() + (clock_timestamp() - now()): the queue clock moved on by the transaction's own
 *   time so far, where a lease must start after the locks the function waited for;
 * - queue_health's age of the oldest transaction (now() - pg_stat_activity.xact_start): real time
 *   against a real start, not a queue time;
 * - schema/functions/common: lock deadlines (ol_lock_deadline, ol_lock_budget) are real time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..', '..', 'schema', 'functions');
const sqlCode = (file: string) =>
	readFileSync(file, 'utf8')
		.replace(/\/\*[\s\S]*?\*\//g, '')
		.replace(/--.*$/gm, '');
const CLOCK_READ = /(?<![\w.])(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday)\s*\(\s*\)|\b(current_timestamp|localtimestamp|current_time|current_date)\b/gi;

function directReads(area: string, clock: string, allowed: RegExp[]): string[] {
	const dir = path.join(root, area);
	return readdirSync(dir)
		.filter((f) => f.endsWith('.sql') && f !== `${clock}.sql`)
		.flatMap((f) => {
			let text = sqlCode(path.join(dir, f));
			for (const a of allowed) text = text.replace(a, '');
			return [...text.matchAll(CLOCK_READ)].map((m) => `${area}/${f}: ${m[0]}`);
		});
}

describe('clocks', () => {
	it('the check sees a direct read and passes the allowed forms (so the checks below can fail)', () => {
		expect('x <= now() AND y').toMatch(CLOCK_READ);
		expect('SET updated_at = CURRENT_TIMESTAMP').toMatch(CLOCK_READ);
		expect('x <= queue_now() AND ledger_now() > y').not.toMatch(CLOCK_READ);
	});

	it('queue functions read time through queue_now() only', () => {
		expect(directReads('queue', 'queue_now', [/queue_now\(\) \+ \(clock_timestamp\(\) - now\(\)\)/g, /now\(\) - a\.xact_start/g])).toEqual([]);
	});

	it('ledger functions read time through ledger_now() only', () => {
		expect(directReads('ledger', 'ledger_now', [])).toEqual([]);
	});
});
