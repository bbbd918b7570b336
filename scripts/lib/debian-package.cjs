// A program from one of Debian's packages that a test needs (pgbouncer for the hardening tests,
// chromium for the editor test), installed with apt-get on first use, so that `npm test` passes on
// a fresh Debian/Ubuntu machine as .ci/run does. CommonJS so both ES modules and ts-jest load it.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');

/** How long one apt-get step may take (ms): a download of chromium and its libraries fits. */
const APT_STEP_TIMEOUT_MS = 10 * 60_000;

/** The first of `candidates` (absolute paths) that exists, else `name` found on PATH, else undefined. */
function findProgram(name, candidates = []) {
	for (const p of candidates) if (existsSync(p)) return p;
	const w = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
	return w.status === 0 && w.stdout.trim() ? w.stdout.trim() : undefined;
}

/**
 * The path of program `name`; when it is missing, installs Debian's package `pkg` with apt-get
 * (as root, else through `sudo -n`; each step bounded by APT_STEP_TIMEOUT_MS) and looks again.
 * `candidates`: absolute paths to try before PATH. `log`: called with one line before installing.
 * Throws an Error naming the package, the command to run by hand and apt-get's last output when
 * the program is still missing.
 */
function ensureDebianProgram({ name, pkg = name, candidates = [], log = () => {} }) {
	const found = findProgram(name, candidates);
	if (found) return found;
	log(`${name} is missing: installing Debian's ${pkg} with apt-get (first run only)`);
	const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
	const wrap = (args) => (asRoot ? ['apt-get', args] : ['sudo', ['-n', 'apt-get', ...args]]);
	const steps = [wrap(['update', '-qq']), wrap(['install', '-y', '-qq', pkg])];
	const transcript = [];
	for (const [cmd, args] of steps) {
		const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: APT_STEP_TIMEOUT_MS });
		transcript.push(`$ ${cmd} ${args.join(' ')} -> ${r.status ?? r.error?.message}\n${(r.stderr ?? '').slice(-500)}`);
	}
	const after = findProgram(name, candidates);
	if (after) return after;
	throw new Error(
		`${name} is not installed and could not be installed (apt-get install -y ${pkg} failed). ` +
			`Install it (Debian/Ubuntu: apt-get install -y ${pkg}) and run the tests again.\n` +
			transcript.join('\n'),
	);
}

module.exports = { ensureDebianProgram, findProgram, APT_STEP_TIMEOUT_MS };
