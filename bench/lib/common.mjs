// Shared helpers for the benchmark suites (bench/*.mjs). Each suite is a standalone script that
// scripts/bench.mjs runs in its own Node process (with --expose-gc) and that writes its figures
// as JSON to the file named by BENCH_OUT. The package is loaded from the BUILT dist/ folder.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

export const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
export const require = createRequire(path.join(repoRoot, 'package.json'));
/** Loads a built module of this package, e.g. dist('src/queue/index.js'). */
export const dist = (rel) => require(path.join(repoRoot, 'dist', rel));
/** pg from the repository's devDependencies (the benchmark's own connections). */
export const pg = require('pg');

export const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
/** 'full' (default) or 'quick' (smaller counts, for trying the harness out). */
export const SCALE = process.env.BENCH_SCALE === 'quick' ? 'quick' : 'full';
export const quick = SCALE === 'quick';

export const now = () => performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function log(...args) {
	process.stderr.write(`[${path.basename(process.argv[1] ?? 'bench', '.mjs')}] ${args.join(' ')}\n`);
}

/** Summary of a list of samples (milliseconds unless stated): n, median, p90, p99, min, max, mean. */
export function summarize(samples) {
	const s = [...samples].sort((a, b) => a - b);
	const q = (p) => {
		if (s.length === 0) return null;
		// nearest-rank percentile
		const rank = Math.max(1, Math.ceil((p / 100) * s.length));
		return s[Math.min(s.length, rank) - 1];
	};
	const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : null;
	return { n: s.length, median: q(50), p90: q(90), p99: q(99), min: s[0] ?? null, max: s[s.length - 1] ?? null, mean };
}

export const round = (x, d = 3) => (x === null || x === undefined || !Number.isFinite(x) ? x : Number(x.toFixed(d)));

/** A random schema name for one suite. */
export const randomSchema = (prefix) => `${prefix}_${randomBytes(4).toString('hex')}`;

const schemaValues = new Map();
/**
 * The value the core functions take for schema `name` (a LedgerSchema, src/db/identifiers.ts),
 * made once per name by the package's one constructor, ledgerSchema(), and reused: like a node's
 * connection, a benchmark validates its schema once, not at every call.
 */
export function ledgerSchemaOf(name) {
	let s = schemaValues.get(name);
	if (!s) schemaValues.set(name, (s = dist('src/db/identifiers.js').ledgerSchema(name)));
	return s;
}

/** A pg Pool on the benchmark database. */
export function pool(max = 10) {
	const p = new pg.Pool({ connectionString: DATABASE_URL, max, application_name: 'bench' });
	p.on('error', () => undefined);
	return p;
}

/**
 * Bulk-loads `n` pending tasks into `queue` of `schema` (INSERT … SELECT generate_series): groups
 * high / normal / low round robin, payload {n}, the fairness tags enqueue would have written (a
 * group's k-th task: k / weight, weights 5:2:1), and each group's last tag recorded. The tasks became
 * available over the `spanSeconds` ending `endsAgoSeconds` ago (run_at = enqueued_at).
 */
export async function loadTaggedBacklog(p, schema, queue, n, { endsAgoSeconds = 0, spanSeconds = 100 } = {}) {
	await p.query(
		`INSERT INTO "${schema}".queue_tasks (queue, priority_group, status, payload, run_at, enqueued_at, vtag)
		 SELECT $2, (ARRAY['high', 'normal', 'low'])[1 + g % 3], 'pending', jsonb_build_object('n', g), t.at, t.at,
		        ((g + 2) / 3)::float8 / (ARRAY[5, 2, 1])[1 + g % 3]
		   FROM generate_series(1, $1::int) g
		  CROSS JOIN LATERAL (SELECT now() - make_interval(secs => $3) - (($1::int - g) * make_interval(secs => $4) / $1::int) AS at) t`,
		[n, queue, endsAgoSeconds, spanSeconds],
	);
	await p.query(
		`INSERT INTO "${schema}".queue_group_tags (queue, priority_group, last_tag)
		 SELECT $1, t.priority_group, max(t.vtag) FROM "${schema}".queue_tasks t WHERE t.queue = $1 GROUP BY t.priority_group
		 ON CONFLICT (queue, priority_group) DO UPDATE SET last_tag = greatest(queue_group_tags.last_tag, excluded.last_tag)`,
		[queue],
	);
}

/**
 * One timed claim of up to `limit` tasks of `queue` of schema `schema` (a name; the package's dequeue, lease 300 s), then its
 * completion (not timed). Returns { ms, n }. `exact`: throw unless exactly `limit` were claimed.
 */
export async function timedClaim(p, schema, queue, limit, { exact = true } = {}) {
	const Q = dist('src/queue/index.js');
	const t = now();
	const tasks = await Q.dequeue(p, ledgerSchemaOf(schema), { queue, limit, leaseSeconds: 300 });
	const ms = now() - t;
	if (exact ? tasks.length !== limit : tasks.length === 0) throw new Error(`claimed ${tasks.length} of ${limit}`);
	await Q.complete(p, ledgerSchemaOf(schema), tasks.map((x) => ({ taskId: x.taskId, leaseToken: x.leaseToken })));
	return { ms, n: tasks.length };
}

/** Applies this package's migrations to `schema` (a name; via the built migration runner). */
export async function migrateSchema(p, schema) {
	const { migrate } = dist('src/db/migrate.js');
	await migrate(p, ledgerSchemaOf(schema), true);
}

/**
 * The hand-written IExecuteFunctions stand-in of the tests (test/helpers/fakeExecute.ts), compiled
 * once with esbuild into the OS temp folder, so the benchmarks drive the nodes exactly as the tests do.
 */
export async function loadFakeExecute() {
	const { build } = require('esbuild');
	const outfile = path.join(os.tmpdir(), `ol-bench-fakeExecute-${process.pid}.cjs`);
	await build({
		entryPoints: [path.join(repoRoot, 'test/helpers/fakeExecute.ts')],
		outfile,
		bundle: true,
		platform: 'node',
		format: 'cjs',
		external: ['n8n-workflow'],
		logLevel: 'warning',
	});
	const mod = require(outfile);
	rmSync(outfile, { force: true });
	return mod;
}

/** Credentials for the nodes: the benchmark database and `schema`. */
export function credentials(schema, extra = {}) {
	return {
		connectionType: 'connectionString',
		connectionString: DATABASE_URL,
		ssl: 'disable',
		schema,
		autoApplySchema: true,
		maxConnections: 5,
		...extra,
	};
}

/** Writes the suite's result to BENCH_OUT (or prints it). */
export function writeResult(result) {
	const out = process.env.BENCH_OUT;
	const text = JSON.stringify(result, null, 2);
	if (out) {
		mkdirSync(path.dirname(out), { recursive: true });
		writeFileSync(out, text);
	} else {
		process.stdout.write(`${text}\n`);
	}
}

export function readJson(file) {
	return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
}

/** Memory snapshot in MiB (after a full GC when --expose-gc is on). */
export function memory(gc = true) {
	if (gc && global.gc) {
		global.gc();
		global.gc();
	}
	const m = process.memoryUsage();
	const mib = (b) => b / (1024 * 1024);
	return { rss: mib(m.rss), heapUsed: mib(m.heapUsed), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) };
}

/**
 * Samples memory every `everyMs` while `fn` runs; returns fn's result and the peaks (MiB) over
 * the baseline taken (after GC) just before it.
 */
export async function peakMemory(fn, everyMs = 2) {
	const base = memory(true);
	let peakRss = base.rss;
	let peakHeap = base.heapUsed;
	const sample = () => {
		const m = process.memoryUsage();
		peakRss = Math.max(peakRss, m.rss / 1048576);
		peakHeap = Math.max(peakHeap, m.heapUsed / 1048576);
	};
	const timer = setInterval(sample, everyMs);
	let value;
	try {
		value = await fn(sample);
	} finally {
		clearInterval(timer);
		sample();
	}
	const after = memory(true);
	return {
		value,
		baseRssMiB: round(base.rss, 1),
		baseHeapMiB: round(base.heapUsed, 1),
		peakRssDeltaMiB: round(peakRss - base.rss, 1),
		peakHeapDeltaMiB: round(peakHeap - base.heapUsed, 1),
		retainedHeapDeltaMiB: round(after.heapUsed - base.heapUsed, 1),
	};
}

/** Postgres server facts worth printing with the figures. */
export async function serverInfo(p) {
	const { rows } = await p.query(
		`SELECT current_setting('server_version') AS version, current_setting('shared_buffers') AS shared_buffers,
		        current_setting('synchronous_commit') AS synchronous_commit, current_setting('max_connections') AS max_connections`,
	);
	return rows[0];
}
