// Pieces the suites that run a real n8n share (bench/n8n-request-price.mjs, bench/n8n-drain.mjs):
// workflow JSON builders, the two Postgres credentials, importing and publishing workflows with a
// skip per workflow that fails, and CPU time of process groups from /proc.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * A builder of one workflow's nodes: node(name, type, typeVersion, parameters, extra) places each
 * new node 200 px right of the previous one; link('A', 'B', 'C') connects output 0 of each to the next.
 */
export function workflowBuilder() {
	let pos = 0;
	const node = (name, type, typeVersion, parameters, extra = {}) => ({ id: randomUUID(), name, type, typeVersion, position: [(pos += 200), 0], parameters, ...extra });
	return { node, link };
}

/** Connections of a straight chain of nodes: output 0 of each to input 0 of the next. */
export const link = (...names) => names.slice(0, -1).reduce((c, n, i) => ({ ...c, [n]: { main: [[{ node: names[i + 1], type: 'main', index: 0 }]] } }), {});

/** A Set node (3.4) that keeps the item's fields and adds `fields` ({ name: [type, value] }). */
export function setNode(node, name, fields) {
	const assignments = Object.entries(fields).map(([n, [type, value]]) => ({ id: randomUUID(), name: n, value, type }));
	return node(name, 'n8n-nodes-base.set', 3.4, { mode: 'manual', assignments: { assignments }, includeOtherFields: true, options: {} });
}

/** The package's credential (id `ledger-pg`) on `databaseUrl`, schema `schema`, applied automatically. */
export const ledgerCredential = (databaseUrl, schema, maxConnections = 5) => ({
	id: 'ledger-pg',
	name: 'Ledger',
	type: 'operationLedgerPostgresApi',
	data: { connectionType: 'connectionString', connectionString: databaseUrl, ssl: 'disable', schema, autoApplySchema: true, maxConnections },
});

/** n8n's own Postgres credential (id `plain-pg`) on `databaseUrl`. */
export function postgresCredential(databaseUrl) {
	const u = new URL(databaseUrl);
	return {
		id: 'plain-pg',
		name: 'Plain Postgres',
		type: 'postgres',
		data: { host: u.hostname, port: Number(u.port || 5432), database: u.pathname.slice(1), user: decodeURIComponent(u.username || 'postgres'), password: decodeURIComponent(u.password), ssl: 'disable' },
	};
}

/**
 * Imports `workflows` (each with an id) in one CLI call (each call starts n8n: seconds), one by one
 * only when that fails, and publishes each. A workflow whose import or publish fails is pushed to
 * `skipped` as { part: partOf(workflow) (default: its id), reason } and left out. Returns the ids published.
 */
export async function importAndPublish(n8n, workflows, skipped, log, partOf = (wf) => wf.id) {
	const together = await n8n.importWorkflow(workflows).then(
		() => true,
		() => false,
	);
	const ok = [];
	for (const wf of workflows) {
		try {
			if (!together) await n8n.importWorkflow(wf);
			await n8n.publishWorkflow(wf.id);
			ok.push(wf.id);
		} catch (e) {
			const reason = `import/publish failed: ${String(e.message).split('\n')[0]}`;
			skipped.push({ part: partOf(wf), reason });
			log?.(`SKIPPED ${partOf(wf)}: ${reason}`);
		}
	}
	return ok;
}

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
export const CLOCK_TICKS = 100;

/**
 * The fields of one /proc/<pid>/stat line that the CPU counts need: { pid, comm, pgrp, cpuTicks
 * (utime + stime) }. The command name is in parentheses and may hold spaces and parentheses, so
 * the fields are counted from the last ')'. Returns null for a line that is not of that form.
 */
export function parseProcStat(line) {
	const open = line.indexOf('(');
	const close = line.lastIndexOf(')');
	if (open < 0 || close < open) return null;
	const rest = line.slice(close + 2).trim().split(/\s+/);
	// rest[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
	if (rest.length < 13) return null;
	const pgrp = Number(rest[2]);
	const cpuTicks = Number(rest[11]) + Number(rest[12]);
	if (!Number.isFinite(pgrp) || !Number.isFinite(cpuTicks)) return null;
	return { pid: Number(line.slice(0, open).trim()), comm: line.slice(open + 1, close), pgrp, cpuTicks };
}

/** Every process's parsed /proc/<pid>/stat (processes that exit while being read are left out). */
export function readProcesses() {
	const out = [];
	for (const d of readdirSync('/proc')) {
		if (!/^\d+$/.test(d)) continue;
		try {
			const p = parseProcStat(readFileSync(`/proc/${d}/stat`, 'utf8'));
			if (p) out.push(p);
		} catch {
			/* exited */
		}
	}
	return out;
}

/**
 * CPU seconds used between two snapshots (Map pid -> cpuTicks) of the same processes: a process in
 * both counts its difference, one only in `after` (started in between) all of its time; one that
 * exited in between is not counted (its time is lost with it).
 */
export function cpuSecondsBetween(before, after) {
	let ticks = 0;
	for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
	return ticks / CLOCK_TICKS;
}
