/**
 * The pure parts of bench/lib/n8n-bench.mjs that the n8n benchmarks count CPU with: reading a
 * /proc/<pid>/stat line, and CPU seconds between two snapshots.
 */
import { nodeRequire } from '../../helpers/n8nHarness';

const lib = nodeRequire('../../bench/lib/n8n-bench.mjs') as {
	CLOCK_TICKS: number;
	parseProcStat(line: string): { pid: number; comm: string; pgrp: number; cpuTicks: number } | null;
	cpuSecondsBetween(before: Map<number, number>, after: Map<number, number>): number;
	link(...names: string[]): Record<string, { main: Array<Array<{ node: string; type: string; index: number }>> }>;
};

/** A stat line as Linux writes it: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ... */
const statLine = (pid: number, comm: string, pgrp: number, utime: number, stime: number) =>
	`${pid} (${comm}) S 1 ${pgrp} ${pgrp} 0 -1 4194560 1000 0 0 0 ${utime} ${stime} 0 0 20 0 11 0 12345 1000000 5000 18446744073709551615`;

describe('parseProcStat', () => {
	it('reads the process group and utime + stime', () => {
		expect(lib.parseProcStat(statLine(4242, 'node', 4200, 150, 30))).toEqual({ pid: 4242, comm: 'node', pgrp: 4200, cpuTicks: 180 });
	});

	it('counts the fields from the last parenthesis, so a command name with spaces and parentheses does not shift them', () => {
		expect(lib.parseProcStat(statLine(7, 'n8n (task) runner', 5, 9, 1))).toEqual({ pid: 7, comm: 'n8n (task) runner', pgrp: 5, cpuTicks: 10 });
	});

	it('returns null for a line that is not a stat line', () => {
		expect(lib.parseProcStat('')).toBeNull();
		expect(lib.parseProcStat('12 (x) S 1 2')).toBeNull();
	});
});

describe('cpuSecondsBetween', () => {
	it('counts the growth of a process in both snapshots and the whole time of one started in between, not one that exited', () => {
		const before = new Map([
			[1, 100],
			[2, 50],
		]);
		const after = new Map([
			[1, 160],
			[3, 40],
		]);
		expect(lib.cpuSecondsBetween(before, after)).toBe((60 + 40) / lib.CLOCK_TICKS);
	});
});

describe('link', () => {
	it('connects output 0 of each node to the next', () => {
		expect(lib.link('A', 'B', 'C')).toEqual({
			A: { main: [[{ node: 'B', type: 'main', index: 0 }]] },
			B: { main: [[{ node: 'C', type: 'main', index: 0 }]] },
		});
	});
});
