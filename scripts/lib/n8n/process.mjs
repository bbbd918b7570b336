// Processes, log files and lock folders for the n8n harness (scripts/lib/n8n.mjs). Every process
// it starts runs in a process group of its own, which is killed when it ends (n8n leaves its task
// runner behind otherwise) and, at the latest, when this process exits.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Runs a command to completion in its own process group; resolves { code, signal, timedOut,
 * stdout, stderr } (code null when it was killed at `timeoutMs`, default 10 minutes); never rejects
 * on an exit code, only when the command cannot be started. Output is appended to `logFile` too.
 */
export function run(cmd, args, { cwd, env, timeoutMs = 10 * 60_000, logFile, input } = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
		if (child.pid) trackGroup(child.pid);
		const out = [];
		const err = [];
		child.stdout.on('data', (d) => {
			out.push(d);
			if (logFile) appendFileSync(logFile, d);
		});
		child.stderr.on('data', (d) => {
			err.push(d);
			if (logFile) appendFileSync(logFile, d);
		});
		if (input !== undefined) child.stdin.end(input);
		else child.stdin.end();
		let timedOut = false;
		const timer = setTimeout(() => {
			timedOut = true;
			killGroup(child.pid, 'SIGKILL');
		}, timeoutMs);
		child.on('error', (e) => {
			clearTimeout(timer);
			reject(e);
		});
		child.on('close', (code, signal) => {
			clearTimeout(timer);
			// The command may have left children in its group (n8n's task runner): end them too.
			killGroup(child.pid, 'SIGKILL');
			untrackGroup(child.pid);
			resolve({
				code: timedOut ? null : code,
				signal,
				timedOut,
				stdout: Buffer.concat(out).toString('utf8'),
				stderr: Buffer.concat(err).toString('utf8'),
			});
		});
	});
}

/** Sends `signal` to the process group `pid`; false when there is no such group. */
export function killGroup(pid, signal) {
	if (!pid) return false;
	try {
		process.kill(-pid, signal);
		return true;
	} catch {
		return false;
	}
}

/** True while any process of the group `pid` lives. */
export function groupAlive(pid) {
	try {
		process.kill(-pid, 0);
		return true;
	} catch (e) {
		return e.code === 'EPERM';
	}
}

/** Resolves to the promise's value, or to 'timeout' after `ms`; the timer never outlives it. */
export async function within(promise, ms) {
	let timer;
	try {
		return await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))]);
	} finally {
		clearTimeout(timer);
	}
}

/**
 * Calls `check` every `intervalMs` (default 250) until it returns a truthy value, and returns that
 * value: a wait on a state, bounded by `timeoutMs` (default 60 s). Throws "timed out after <ms> ms
 * waiting for <what>" when the deadline passes (`check` runs once more after it); an error thrown
 * by `check` ends the wait with that error.
 */
export async function pollUntil(check, { what, timeoutMs = 60_000, intervalMs = 250 }) {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const past = Date.now() > deadline;
		const v = await check();
		if (v) return v;
		if (past) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
		await sleep(intervalMs);
	}
}

/** The size of `file` in bytes, 0 when it does not exist. */
export function fileSize(file) {
	try {
		return statSync(file).size;
	} catch {
		return 0;
	}
}

/** The text of `file` from byte `offset` on ('' when it cannot be read). */
export function readFrom(file, offset) {
	try {
		return readFileSync(file).subarray(offset).toString('utf8');
	} catch {
		return '';
	}
}

/** The last `lines` lines of `file`, for error messages. */
export function tail(file, lines = 60) {
	try {
		return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
	} catch {
		return '(no log)';
	}
}

// Process groups we started; killed on exit so a crashed test leaves no n8n behind.
const liveGroups = new Set();
let exitHookInstalled = false;
/** Remembers a process group we started, so that it is killed when this process exits. */
export function trackGroup(pid) {
	liveGroups.add(pid);
	if (exitHookInstalled) return;
	exitHookInstalled = true;
	process.on('exit', () => {
		for (const g of liveGroups) killGroup(g, 'SIGKILL');
	});
}

/** Forgets a process group that has ended (it is no longer killed at exit). */
export function untrackGroup(pid) {
	liveGroups.delete(pid);
}

/**
 * Takes the lock folder `lock` (mkdir is atomic): waits `pollMs` between tries while another
 * process holds it, and takes it over when it is older than `staleMs` (its holder died; a holder
 * that works longer touches it). Resolves once this process holds it; the caller removes it.
 */
export async function takeLockFolder(lock, { staleMs, pollMs }) {
	for (;;) {
		try {
			mkdirSync(lock);
			return;
		} catch (e) {
			if (e.code !== 'EEXIST') throw e;
			let age = 0;
			try {
				age = Date.now() - statSync(lock).mtimeMs;
			} catch {
				continue; // released meanwhile
			}
			if (age > staleMs) rmSync(lock, { recursive: true, force: true });
			else await sleep(pollMs);
		}
	}
}
