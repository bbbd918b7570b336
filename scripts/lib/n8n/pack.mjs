// Packing this package as npm would publish it, for installing into an n8n like a user does.
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../embedded-pg.mjs';
import { run, tail, takeLockFolder } from './process.mjs';

/**
 * `npm run build` then `npm pack` into a fresh temp folder; returns the tarball's absolute path.
 * The temp folder is removed when this process exits (pass `destDir` to keep the tarball).
 */
export async function packPackage({ build = true, destDir } = {}) {
	// Two test files (jest workers) or two processes packing at once would rebuild dist/ under
	// each other: one at a time (a lock folder, taken over after 10 minutes).
	const lock = path.join(repoRoot, '.cache', 'pack-lock');
	mkdirSync(path.dirname(lock), { recursive: true });
	await takeLockFolder(lock, { staleMs: 10 * 60_000, pollMs: 1000 });
	try {
		return await packLocked({ build, destDir });
	} finally {
		rmSync(lock, { recursive: true, force: true });
	}
}

/** The build and the pack, while this process holds the pack lock. */
async function packLocked({ build, destDir }) {
	const dest = destDir ?? mkdtempSync(path.join(os.tmpdir(), 'ledger-pack-'));
	mkdirSync(dest, { recursive: true });
	if (!destDir) process.on('exit', () => rmSync(dest, { recursive: true, force: true }));
	const logFile = path.join(dest, 'pack.log');
	if (build) {
		const b = await run('npm', ['run', 'build'], { cwd: repoRoot, logFile, timeoutMs: 5 * 60_000 });
		if (b.code !== 0) throw new Error(`npm run build failed (exit ${b.code}):\n${tail(logFile, 40)}`);
	}
	const p = await run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: repoRoot, timeoutMs: 2 * 60_000 });
	appendFileSync(logFile, p.stdout + p.stderr);
	if (p.code !== 0) throw new Error(`npm pack failed (exit ${p.code}):\n${p.stderr.slice(-3000)}`);
	const start = p.stdout.indexOf('[');
	const info = JSON.parse(p.stdout.slice(start));
	const tarball = path.join(dest, info[0].filename);
	if (!existsSync(tarball)) throw new Error(`npm pack reported ${tarball} but it is not there`);
	return tarball;
}

