// The peer queues, installed from npm into bench/peers/node_modules (git-ignored) by
// scripts/bench.mjs. Loaded from there only; nothing of them is committed.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './common.mjs';

export const PEERS = { 'graphile-worker': '0.17.3', 'pg-boss': '10.4.2' };
export const peersDir = path.join(repoRoot, 'bench', 'peers');
const peerRequire = createRequire(path.join(peersDir, 'node_modules', 'noop.js'));

/** Installed version of a peer, or undefined. */
export function installedVersion(name) {
	const pj = path.join(peersDir, 'node_modules', name, 'package.json');
	if (!existsSync(pj)) return undefined;
	return peerRequire(pj).version;
}

export function loadGraphileWorker() {
	return peerRequire('graphile-worker');
}

export function loadPgBoss() {
	const m = peerRequire('pg-boss');
	return m.default ?? m;
}

/** A graphile-worker logger that drops everything below warnings. */
export function quietGraphileLogger(gw) {
	return new gw.Logger(() => (level, message) => {
		if (level === 'error' || level === 'warning') process.stderr.write(`[graphile-worker] ${level}: ${message}\n`);
	});
}
