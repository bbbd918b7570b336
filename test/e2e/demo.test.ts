/**
 * `npm run demo` (scripts/demo.mjs) end to end in a real n8n: both stories are told and the story
 * holds (exit status 0). Replay and conflict for order-1001; the crash window for order-1002: the
 * provider commits, n8n's process group is killed before the ledger records the answer, n8n
 * restarts and marks the execution, the retry finds the operation unknown and sends nothing, the
 * reconcile workflow records the payment, the next retry answers Done Before; one payment per
 * order key. The printed output is kept in DEMO_OUTPUT (default .cache/demo/last-run.txt).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const OUTPUT = process.env.DEMO_OUTPUT || path.join(ROOT, '.cache', 'demo', 'last-run.txt');

function runDemo(): Promise<{ code: number | null; out: string }> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, [path.join(ROOT, 'scripts/demo.mjs')], {
			cwd: ROOT,
			env: { ...process.env, DATABASE_URL },
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		let out = '';
		child.stdout.on('data', (d: Buffer) => (out += d.toString()));
		child.stderr.on('data', (d: Buffer) => (out += d.toString()));
		child.on('error', reject);
		child.on('close', (code) => resolve({ code, out }));
	});
}

describe('npm run demo', () => {
	let result: { code: number | null; out: string };
	beforeAll(async () => {
		result = await runDemo();
		mkdirSync(path.dirname(OUTPUT), { recursive: true });
		writeFileSync(OUTPUT, result.out);
	}, 20 * 60_000);

	it('exits 0: the story holds', () => {
		expect({ code: result.code, tail: result.code === 0 ? '' : result.out.slice(-4000) }).toEqual({ code: 0, tail: '' });
		expect(result.out).toContain('RESULT: one payment per order key.');
		expect(result.out).not.toContain('does NOT hold');
	});

	it('tells the replay and the conflict for order-1001', () => {
		expect(result.out).toMatch(/Run 1: charge 4200 EUR .*\n.*→ Succeeded; sent 1 request/);
		expect(result.out).toMatch(/Run 2: the same again .*\n.*→ Done Before; sent 0 request/);
		expect(result.out).toMatch(/Run 3: same order key, but 9900 EUR .*\n.*→ Conflict; sent 0 request/);
	});

	it('tells the crash window for order-1002, step by step', () => {
		const lines = [
			/The provider committed payment pay_2 .* and holds its answer/,
			/Ledger: status reserved, lease until .*: Charge Payment has not recorded the answer/,
			/kill -9 of n8n's process group \(pid \d+\) while execution \d+ was running/,
			/n8n restarted: pid \d+/,
			/n8n marked the killed execution \d+ "(crashed|error)"; payments at the provider for order-1002: 1/,
			/The lease \(15 s here; .*\) ran out without a confirmation/,
			/Retry 1: the operator runs the payment for order-1002 again .*\n.*→ Reconcile; sent 0 request/,
			/the operation is unknown: it may have been charged/,
			/Resolve Payments → Recorded as Paid; 1 lookup\(s\) at the provider/,
			/ledger: status succeeded, external ref pay_2/,
			/Retry 2: the operator runs the payment for order-1002 once more .*\n.*→ Done Before; sent 0 request/,
		];
		let from = 0;
		for (const re of lines) {
			const m = re.exec(result.out.slice(from));
			expect({ line: re.source, found: Boolean(m) }).toEqual({ line: re.source, found: true });
			if (m) from += m.index + m[0].length;
		}
	});

	it('shows one payment per order key at the provider and the crash in the event log', () => {
		expect(result.out).toContain('Payments at the provider: 2');
		expect(result.out).toContain('(the provider received 2 POST request(s) in all)');
		expect(result.out).toMatch(/pay_1 +4200 +EUR +cus_42/);
		expect(result.out).toMatch(/pay_2 +1500 +EUR +cus_43/);
		for (const event of ['reserved', 'lease_expired', 'reconciled_succeeded']) {
			expect(result.out).toMatch(new RegExp(`payment:charge:order-1002:v1 +${event} `));
		}
	});
});
