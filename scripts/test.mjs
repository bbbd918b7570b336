#!/usr/bin/env node
// `npm test`: every jest project (unit, integration, e2e with a real n8n) on a real Postgres.
//
// Database, first that applies:
//   0. TEST_PG_VERSION=<major> (14, 15, 16, 17 or 18): an embedded Postgres of that major, started
//      here and stopped at the end; the private clusters of the hardening tests use that major's
//      binaries too (`TEST_PG_VERSION=14 npm test -- --selectProjects integration`);
//   1. DATABASE_URL when set;
//   2. postgres://postgres@127.0.0.1:5432/test when CI=true, or when that server answers;
//   3. an embedded Postgres (scripts/lib/embedded-pg.mjs, PostgreSQL 18), started here and stopped
//      at the end (TEST_DATABASE=embedded forces this one).
// DATABASE_URL is exported to jest; the first line printed names the database and its server
// version. Extra arguments go to jest (`npm test -- --selectProjects unit`).
// jest writes its results as JSON to .cache/test-results/jest.json; the last line printed is
// `N passed, N failed`, counted from those results (a suite that could not run counts as one
// failed test); the same line goes to .cache/test-results/summary.txt. Exit status: non-zero when anything failed or jest itself failed.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { canConnect, repoRoot, requestedPgMajor, startEmbeddedPostgres } from './lib/embedded-pg.mjs';

const LOCAL_URL = 'postgres://postgres@127.0.0.1:5432/test';
const JEST_WATCHDOG_MS = 60 * 60_000;

async function chooseDatabase() {
	const major = requestedPgMajor();
	if (major !== undefined) {
		const db = await startEmbeddedPostgres({ major });
		return { ...db, source: `embedded Postgres ${major} (TEST_PG_VERSION=${process.env.TEST_PG_VERSION}, ${db.dataDir})` };
	}
	if (process.env.TEST_DATABASE === 'embedded') {
		const db = await startEmbeddedPostgres();
		return { ...db, source: `embedded Postgres (TEST_DATABASE=embedded, ${db.dataDir})` };
	}
	if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, source: 'DATABASE_URL', stop: async () => {} };
	if (process.env.CI === 'true') return { url: LOCAL_URL, source: 'CI server 127.0.0.1:5432', stop: async () => {} };
	if (await canConnect(LOCAL_URL, 2000)) return { url: LOCAL_URL, source: 'local server 127.0.0.1:5432', stop: async () => {} };
	const db = await startEmbeddedPostgres();
	return { ...db, source: `embedded Postgres (${db.dataDir})` };
}

/** `SHOW server_version` of the server at `url` (e.g. "14.23"), or "(version unknown: <why>)". */
async function serverVersion(url) {
	const { default: pg } = await import('pg');
	const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 5000 });
	client.on('error', () => undefined);
	try {
		await client.connect();
		return (await client.query('SHOW server_version')).rows[0].server_version;
	} catch (e) {
		return `(version unknown: ${e.message})`;
	} finally {
		await client.end().catch(() => undefined);
	}
}

function redact(url) {
	return url.replace(/(\/\/[^:/@]+):[^@]*@/, '$1:***@');
}

async function main() {
	const resultsDir = path.join(repoRoot, '.cache', 'test-results');
	const resultsFile = path.join(resultsDir, 'jest.json');
	mkdirSync(resultsDir, { recursive: true });
	rmSync(resultsFile, { force: true });
	rmSync(path.join(resultsDir, 'summary.txt'), { force: true });

	const db = await chooseDatabase();
	console.log(`Database: ${db.source}: ${redact(db.url)}, PostgreSQL ${await serverVersion(db.url)}`);

	const jestBin = path.join(repoRoot, 'node_modules', 'jest', 'bin', 'jest.js');
	const args = [jestBin, '--ci', '--json', `--outputFile=${resultsFile}`, ...process.argv.slice(2)];
	const t0 = Date.now();
	const jestExit = await new Promise((resolve) => {
		const child = spawn(process.execPath, args, {
			cwd: repoRoot,
			stdio: 'inherit',
			env: { ...process.env, DATABASE_URL: db.url },
		});
		// jest prints a line per finished test file; the e2e files take minutes each and print
		// nothing in between when the output is not a terminal: say it is still running.
		const heartbeat = setInterval(() => {
			console.log(`[npm test] still running: ${Math.round((Date.now() - t0) / 60_000)} min so far (a full run takes about 15 min)`);
		}, 60_000);
		const watchdog = setTimeout(() => {
			console.error(`jest ran longer than ${JEST_WATCHDOG_MS / 60_000} minutes: stopping it`);
			child.kill('SIGKILL');
		}, JEST_WATCHDOG_MS);
		const forward = (sig) => child.kill(sig);
		process.on('SIGINT', forward);
		process.on('SIGTERM', forward);
		child.on('exit', (code, signal) => {
			clearTimeout(watchdog);
			clearInterval(heartbeat);
			process.off('SIGINT', forward);
			process.off('SIGTERM', forward);
			resolve(code ?? (signal ? 128 : 1));
		});
		child.on('error', (e) => {
			clearTimeout(watchdog);
			clearInterval(heartbeat);
			console.error(e);
			resolve(1);
		});
	});
	const seconds = Math.round((Date.now() - t0) / 1000);

	await db.stop().catch((e) => console.error(`stopping the database: ${e.message}`));

	let passed = 0;
	let failed = 0;
	if (existsSync(resultsFile)) {
		const results = JSON.parse(readFileSync(resultsFile, 'utf8'));
		passed = results.numPassedTests ?? 0;
		failed = (results.numFailedTests ?? 0) + (results.numRuntimeErrorTestSuites ?? 0);
		const pending = (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
		if (pending) console.log(`(${pending} skipped or todo tests are counted as neither)`);
	} else {
		console.error(`jest wrote no results to ${resultsFile}`);
	}
	if (jestExit !== 0 && failed === 0) failed = 1; // jest failed without a failed test (config error, crash)
	console.log(`jest finished in ${seconds} s with exit code ${jestExit}; results: ${path.relative(repoRoot, resultsFile)}`);
	const summary = `${passed} passed, ${failed} failed`;
	writeFileSync(path.join(resultsDir, 'summary.txt'), `${summary}\n`);
	console.log(summary);
	process.exitCode = failed > 0 || jestExit !== 0 ? 1 : 0;
}

main().catch((e) => {
	console.error(e);
	console.log('0 passed, 1 failed');
	process.exitCode = 1;
});
