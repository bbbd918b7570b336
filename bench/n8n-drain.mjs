// Draining tasks through a real n8n (scripts/lib/n8n.mjs), regular mode and queue mode (a main and
// two workers, Redis at 127.0.0.1:6379), one consumer workflow per way of handing work to n8n:
//   pdq-b1    Priority Dequeue Trigger, Claim Tasks, Batch Size 1 -> Work (Set) -> Priority Dequeue Complete
//   pdq-b50   the same with Batch Size 50
//   pdq-b1-auto, pdq-b50-auto  the same trigger with Settle Tasks "When the Execution Finishes" -> Work
//             only (the trigger completes the tasks itself when n8n reports the run: no Complete node)
//   rabbitmq  n8n's RabbitMQ Trigger (acknowledge when the execution finishes) -> Work
//   webhook   Webhook (answers on receipt) -> Work: one execution per task, a loopback client posts
//   pg-poll   Schedule Trigger every second -> Postgres (claim up to 50 rows FOR UPDATE SKIP LOCKED and
//             mark them done in one statement) -> Work: the pattern a user builds without the package
// Work is a Set node that records Date.now() into each item; the execution data n8n saves is read
// back from n8n's database afterwards. Each task carries the time it was sent (Date.now() of this
// process, the same clock).
//
// Each variant runs, per mode: a warm-up of WARMUP tasks (not measured); a drain of N tasks sent
// as fast as the producer can (throughput: N / (last execution's stoppedAt - first send), and CPU
// per task); then PACED_N tasks sent one every 1000 / PACED_RATE ms (pickup latency: send -> Work's
// Date.now(), p50 / p99). Every variant may run PARALLEL executions at once (the trigger's Max
// Parallel Executions, RabbitMQ's parallel messages, the client's requests in flight); the trigger
// may start 6,000 executions a minute (its maximum).
//
// CPU per task: the n8n processes (the process groups of the main and the workers, task runners
// included) from /proc/<pid>/stat; the Postgres backends connected to the benchmark's and n8n's
// databases (sampled at the start and the end of the phase: a backend that closed in between is not
// counted; the benchmark's own enqueue and progress queries are in it); RabbitMQ's beam.smp.
// Everything that runs meanwhile on the machine is in none of them, but slows all of them.
//
// Bounds: a drain or paced phase that has not finished after DRAIN_TIMEOUT_MS (max(60 s, N x 100 ms))
// fails its variant (skipped, with the reason); every webhook request has a 30 s socket timeout; the
// RabbitMQ and Redis probes 5 s; n8n's start 180 s (the harness).
//
// Skipped, and said so (`n8n-drain: skipped <part>: <reason>`): everything without an n8n runtime;
// rabbitmq when RabbitMQ does not answer at 127.0.0.1:5672; queue mode when Redis does not answer.
//
// Settings: DRAIN_N, DRAIN_PACED_N, DRAIN_MODES (regular,queue), DRAIN_VARIANTS, DRAIN_NO_BUILD=1,
// DRAIN_TIMEOUT_MS, DRAIN_RABBITMQ_PORT (5672), DRAIN_REDIS_PORT (6379), DRAIN_N8N_NODE_OPTIONS
// (NODE_OPTIONS of the n8n main process only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`: the
// profile is written when the harness stops it).
// Run time on 2 cores (seen at load 2 to 9): --quick 3 to 7 minutes, full about 11 minutes with five
// consumers (pdq-b1-auto, a default since 2026-12-03, about 40 s more per mode).
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { DATABASE_URL, dist, log, migrateSchema, ledgerSchemaOf, pg, pool, quick, randomSchema, round, sleep, summarize, writeResult, require as repoRequire } from './lib/common.mjs';
import { cpuSecondsBetween, importAndPublish, ledgerCredential, link, postgresCredential, readProcesses, setNode, workflowBuilder } from './lib/n8n-bench.mjs';

const N = Number(process.env.DRAIN_N ?? (quick ? 200 : 2000));
const PACED_N = Number(process.env.DRAIN_PACED_N ?? (quick ? 40 : 200));
const PACED_RATE = 20;
const WARMUP = 20;
const PARALLEL = 4;
const PG_POLL_BATCH = 50;
const DRAIN_TIMEOUT_MS = Number(process.env.DRAIN_TIMEOUT_MS ?? Math.max(60_000, N * 100));
const MODES = (process.env.DRAIN_MODES ?? 'regular,queue').split(',');
// pdq-b1-auto by default too: the trigger's fastest batch-1 way (it settles with its next claim).
const VARIANTS = (process.env.DRAIN_VARIANTS ?? 'pdq-b1,pdq-b1-auto,pdq-b50,rabbitmq,webhook,pg-poll').split(',');
const REDIS = { host: '127.0.0.1', port: Number(process.env.DRAIN_REDIS_PORT ?? 6379) };
const AMQP_PORT = Number(process.env.DRAIN_RABBITMQ_PORT ?? 5672);
const AMQP_URL = `amqp://guest:guest@127.0.0.1:${AMQP_PORT}`;

const skipped = [];
const result = { suite: 'n8n-drain', n: N, pacedN: PACED_N, pacedRate: PACED_RATE, parallel: PARALLEL, timeoutMs: DRAIN_TIMEOUT_MS, modes: {}, skipped, targets: [] };
const skip = (part, reason) => {
	skipped.push({ part, reason });
	log(`SKIPPED ${part}: ${reason}`);
};
const flatted = repoRequire('flatted');
// Interrupted: exit normally, so the harness's exit hook stops the n8n process groups it started.
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));

let harness;
try {
	harness = await import('../scripts/lib/n8n.mjs');
} catch (e) {
	finish(`the n8n harness could not be loaded: ${e.message}`);
}
let rt;
try {
	rt = await harness.ensureN8n();
} catch (e) {
	finish(`no n8n runtime (${String(e.message).split('\n')[0]})`);
}

function finish(reasonAll) {
	if (reasonAll) skip('all', reasonAll);
	writeResult(result);
	process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Peers: RabbitMQ through the amqplib n8n's runtime carries (nothing installed for the benchmark).
/** Resolves `what` or rejects after `ms`. */
const within = (what, ms, label) => Promise.race([what, new Promise((_, rej) => setTimeout(() => rej(new Error(`${label} did not answer within ${ms} ms`)), ms).unref())]);

let amqp;
let amqpConn;
if (VARIANTS.includes('rabbitmq')) {
	try {
		amqp = createRequire(path.join(rt.dir, 'node_modules', 'noop.js'))('amqplib');
		amqpConn = await within(amqp.connect(AMQP_URL, { timeout: 5000 }), 5000, `RabbitMQ at 127.0.0.1:${AMQP_PORT}`);
		amqpConn.on('error', () => undefined);
	} catch (e) {
		skip('rabbitmq', `RabbitMQ not reachable at 127.0.0.1:${AMQP_PORT} (${String(e.message).split('\n')[0]})`);
	}
}

/**
 * Runs fn(redis) on a connection to REDIS through the ioredis of n8n's runtime (connect and each
 * command 5 s at most) and closes it; resolves fn's answer, rejects when Redis does not answer.
 */
async function withRedis(fn) {
	const Redis = createRequire(path.join(rt.dir, 'node_modules', 'noop.js'))('ioredis');
	const redis = new Redis({ ...REDIS, connectTimeout: 5000, commandTimeout: 5000, maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
	redis.on('error', () => undefined);
	try {
		await redis.connect();
		return await fn(redis);
	} finally {
		redis.disconnect();
	}
}

/** Whether Redis answers PING. */
const redisAnswers = () => withRedis((r) => r.ping()).then((a) => a === 'PONG', () => false);

/** Deletes the keys a queue-mode run left in Redis (Bull's `prefix:*` and n8n's `n8n_prefix:*`); failures are logged, not thrown. */
async function deleteRedisKeys(prefix) {
	try {
		const deleted = await withRedis(async (redis) => {
			let n = 0;
			for (const match of [`${prefix}:*`, `n8n_${prefix}:*`]) {
				let cursor = '0';
				do {
					const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
					if (keys.length) n += await redis.del(...keys);
					cursor = next;
				} while (cursor !== '0');
			}
			return n;
		});
		log(`deleted ${deleted} Redis keys of ${prefix}`);
	} catch (e) {
		log(`could not delete the Redis keys of ${prefix}: ${e.message}`);
	}
}

const variants = VARIANTS.filter((v) => !skipped.some((s) => s.part === v));
const modes = [];
for (const m of MODES) {
	if (m === 'queue' && !(await redisAnswers())) skip('queue mode', `Redis does not answer at ${REDIS.host}:${REDIS.port}`);
	else modes.push(m);
}

// ---------------------------------------------------------------------------------------------
// Setup on the benchmark database: the ledger schema (the consumers' queues) and the polled tables.
const schema = randomSchema('bench_drain');
const plain = `${schema}_plain`;
const db = pool(4);
await migrateSchema(db, schema);
await db.query(`CREATE SCHEMA "${plain}"`);
const Q = dist('src/queue/index.js');
const rabbitQueue = (mode) => `${schema}_${mode}`;
const pdqQueue = (mode, v) => `${mode}_${v}`;
const pgTable = (mode) => `"${plain}".tasks_${mode}`;
for (const m of modes) {
	await db.query(`CREATE TABLE ${pgTable(m)} (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'pending', payload jsonb NOT NULL)`);
	await db.query(`CREATE INDEX ON ${pgTable(m)} (id) WHERE status = 'pending'`);
}

// ---------------------------------------------------------------------------------------------
// Workflows
const ledgerCred = { operationLedgerPostgresApi: { id: 'ledger-pg', name: 'Ledger' } };
const WORK_FIELDS = { t0: ['number', '={{ Date.now() }}'] };

const isPdq = (v) => v.startsWith('pdq-');
const isAuto = (v) => v.endsWith('-auto');

function workflow(mode, v) {
	const { node } = workflowBuilder();
	let first;
	const tail = [];
	if (isPdq(v)) {
		first = node(
			'Claim',
			'n8n-nodes-operation-ledger.priorityDequeueTrigger',
			1,
			{
				queue: pdqQueue(mode, v),
				mode: 'claim',
				priorityGroups: { group: [{ name: 'normal', weight: 1 }] },
				batchSize: v.startsWith('pdq-b1') ? 1 : 50,
				leaseSeconds: 300,
				settleTasks: isAuto(v) ? 'onFinish' : 'byNode',
				useListen: true,
				pollSeconds: 30,
				maxInFlight: PARALLEL,
				maxPerMinute: 6000,
				options: {},
			},
			{ credentials: ledgerCred },
		);
		if (!isAuto(v)) tail.push(node('Complete', 'n8n-nodes-operation-ledger.priorityDequeue', 1, { resource: 'task', operation: 'complete', taskSource: 'lineage', options: {} }, { credentials: ledgerCred }));
	} else if (v === 'rabbitmq') {
		first = node(
			'RabbitMQ Trigger',
			'n8n-nodes-base.rabbitmqTrigger',
			1,
			{ queue: rabbitQueue(mode), options: { acknowledge: 'executionFinishes', parallelMessages: PARALLEL, jsonParseBody: true, onlyContent: true } },
			{ credentials: { rabbitmq: { id: 'rabbit', name: 'RabbitMQ' } } },
		);
	} else if (v === 'webhook') {
		first = node('Webhook', 'n8n-nodes-base.webhook', 2, { httpMethod: 'POST', path: `drain-${mode}`, responseMode: 'onReceived', options: {} }, { webhookId: randomUUID() });
	} else {
		first = node('Schedule', 'n8n-nodes-base.scheduleTrigger', 1.2, { rule: { interval: [{ field: 'seconds', secondsInterval: 1 }] } });
		const t = pgTable(mode);
		const claim = `WITH c AS (SELECT id FROM ${t} WHERE status = 'pending' ORDER BY id LIMIT ${PG_POLL_BATCH} FOR UPDATE SKIP LOCKED) UPDATE ${t} t SET status = 'done' FROM c WHERE t.id = c.id RETURNING t.id, t.payload`;
		first = [first, node('Claim Rows', 'n8n-nodes-base.postgres', 2.5, { operation: 'executeQuery', query: claim, options: {} }, { credentials: { postgres: { id: 'plain-pg', name: 'Plain Postgres' } } })];
	}
	const nodes = [...[first].flat(), setNode(node, 'Work', WORK_FIELDS), ...tail];
	return {
		id: `drain-${v}`,
		name: `Drain: ${v}`,
		nodes,
		connections: link(...nodes.map((n) => n.name)),
		settings: { executionOrder: 'v1', saveDataSuccessExecution: 'all', saveDataErrorExecution: 'all' },
		active: false,
	};
}

/** The task a Work item carries: { i, sentAt } (each variant's trigger shapes its items its own way). */
const taskOf = {
	'pdq-b1': (j) => j.payload,
	'pdq-b50': (j) => j.payload,
	'pdq-b1-auto': (j) => j.payload,
	'pdq-b50-auto': (j) => j.payload,
	rabbitmq: (j) => j,
	webhook: (j) => j.body,
	'pg-poll': (j) => j.payload,
};

// ---------------------------------------------------------------------------------------------
// Producers: send tasks [from, from + n) of a phase, as fast as possible or one every `gapMs`.
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
function post(url, body) {
	return new Promise((resolve, reject) => {
		const data = JSON.stringify(body);
		const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }, timeout: 30_000 }, (res) => {
			res.resume();
			res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`webhook answered HTTP ${res.statusCode}`))));
		});
		req.on('timeout', () => req.destroy(new Error('webhook request timed out after 30 s')));
		req.on('error', reject);
		req.end(data);
	});
}

async function producer(ctx, v) {
	if (v === 'rabbitmq') {
		const ch = await ctx.amqpChannel();
		return {
			send: async (tasks) => {
				for (const t of tasks) ch.sendToQueue(rabbitQueue(ctx.mode), Buffer.from(JSON.stringify(t)), { persistent: true, contentType: 'application/json' });
				await ch.waitForConfirms();
			},
			chunk: 1,
		};
	}
	if (v === 'webhook') {
		const url = `${ctx.n8n.url}/webhook/drain-${ctx.mode}`;
		// A burst keeps 8 requests in flight (the agent's sockets); each task is one request.
		return { send: (tasks) => Promise.all(tasks.map((t) => post(url, t))), chunk: 8 };
	}
	if (v === 'pg-poll') {
		return {
			send: (tasks) => db.query(`INSERT INTO ${pgTable(ctx.mode)} (id, payload) SELECT (x->>'i')::bigint, x FROM jsonb_array_elements($1::jsonb) x`, [JSON.stringify(tasks)]),
			chunk: 100,
		};
	}
	const queue = pdqQueue(ctx.mode, v);
	return { send: (tasks) => Q.enqueue(db, ledgerSchemaOf(schema), tasks.map((t) => ({ queue, group: 'normal', payload: t }))), chunk: 100 };
}

/** Sends n tasks numbered from `from`; burst: chunk by chunk back to back; paced: one every gapMs. */
async function send(prod, from, n, gapMs) {
	const start = Date.now();
	for (let k = 0; k < n; ) {
		const size = gapMs ? 1 : Math.min(prod.chunk, n - k);
		if (gapMs) {
			const due = start + k * gapMs;
			if (due > Date.now()) await sleep(due - Date.now());
		}
		const now = Date.now();
		await prod.send(Array.from({ length: size }, (_, j) => ({ i: from + k + j, sentAt: now })));
		k += size;
	}
	return start;
}

// ---------------------------------------------------------------------------------------------
// Measuring

/** Snapshot of CPU ticks per pid: n8n's process groups, the Postgres backends of our databases, beam.smp. */
async function cpuSnapshot(ctx) {
	const procs = readProcesses();
	const { rows } = await db.query(`SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)`, [[new URL(DATABASE_URL).pathname.slice(1), ctx.n8n.database.database]]);
	const backends = new Set(rows.map((r) => r.pid));
	const pick = (f) => new Map(procs.filter(f).map((p) => [p.pid, p.cpuTicks]));
	return { n8n: pick((p) => ctx.groups().includes(p.pgrp)), postgres: pick((p) => backends.has(p.pid)), rabbitmq: pick((p) => p.comm === 'beam.smp') };
}

/** Polls every 200 ms until `done()` and no execution of `wf` after `fromId` is unfinished; false at the deadline. */
async function waitDrained(ctx, wf, fromId, done, deadline) {
	while (Date.now() < deadline) {
		if (await done()) {
			const { rows } = await ctx.n8nDb.query(`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1 AND id > $2 AND "stoppedAt" IS NULL`, [wf, fromId]);
			if (rows[0].n === 0) return true;
		}
		await sleep(200);
	}
	return false;
}

/**
 * The trigger-settled consumers (Settle Tasks "When the Execution Finishes"): the tasks of this
 * phase still processing although Work saw each of them in an execution n8n's database shows as
 * finished. Those are executions whose run n8n never handed back to the trigger (seen in queue mode,
 * docs/queue.md "Settling when the execution finishes"); their tasks would wait for their lease
 * and run again. Returns undefined while anything else is left (a pending task, a processing task
 * no finished execution worked on, more than a few such tasks), else the list (possibly empty).
 */
async function unreported(ctx, v, wf, fromId, n) {
	const q = pdqQueue(ctx.mode, v);
	const count = (await db.query(`SELECT count(*)::int AS total, count(*) FILTER (WHERE status <> 'processing')::int AS other FROM "${schema}".queue_tasks WHERE queue = $1`, [q])).rows[0];
	if (count.total === 0) return [];
	if (count.other > 0 || count.total > Math.max(5, Math.ceil(n / 100))) return undefined;
	const { rows } = await db.query(`SELECT id::text AS id, lease_token, (payload->>'i')::int AS i FROM "${schema}".queue_tasks WHERE queue = $1`, [q]);
	const seen = await workItems(ctx, v, wf, fromId);
	const done = new Set(seen.items.map((x) => x.i));
	return rows.every((r) => done.has(r.i)) ? rows : undefined;
}

/** What a drain that timed out left behind: its queue's tasks by status (and lease state), its unfinished executions. */
async function leftOver(ctx, v, wf, fromId) {
	const parts = [];
	if (isPdq(v)) {
		const { rows } = await db.query(
			`SELECT status, (lease_expires_at < now()) AS expired, count(*)::int AS n FROM "${schema}".queue_tasks WHERE queue = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
			[pdqQueue(ctx.mode, v)],
		);
		parts.push(`tasks left: ${rows.map((r) => `${r.n} ${r.status}${r.status === 'processing' ? (r.expired ? ' (lease expired)' : ' (lease live)') : ''}`).join(', ') || 'none'}`);
	}
	const { rows } = await ctx.n8nDb.query(
		`SELECT status, count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1 AND id > $2 AND "stoppedAt" IS NULL GROUP BY 1`,
		[wf, fromId],
	);
	parts.push(`unfinished executions: ${rows.map((r) => `${r.n} ${r.status}`).join(', ') || 'none'}`);
	return parts.join('; ');
}

/**
 * What says the n tasks sent since `fromId` are through (besides no unfinished execution). For the
 * trigger-settled consumers, `lost.tasks` is left holding the last answer of unreported().
 */
function doneCheck(ctx, v, wf, fromId, n, lost) {
	if (isAuto(v))
		return async () => {
			const left = await unreported(ctx, v, wf, fromId, n);
			if (left === undefined) return false;
			lost.tasks = left;
			return true;
		};
	if (isPdq(v)) return async () => (await db.query(`SELECT count(*)::int AS n FROM "${schema}".queue_tasks WHERE queue = $1`, [pdqQueue(ctx.mode, v)])).rows[0].n === 0;
	if (v === 'pg-poll') return async () => (await db.query(`SELECT count(*)::int AS n FROM ${pgTable(ctx.mode)} WHERE status = 'pending'`)).rows[0].n === 0;
	// One execution per task.
	return async () => (await ctx.n8nDb.query(`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1 AND id > $2 AND "stoppedAt" IS NOT NULL`, [wf, fromId])).rows[0].n >= n;
}

/**
 * The Work items of the executions of `wf` after `fromId`, from n8n's saved run data: per task
 * { i, sentAt, t0 }, and the executions' { count, lastStop (ms), errors }. Executions in which Work
 * did not run (a poll that found nothing) are not counted.
 */
async function workItems(ctx, v, wf, fromId) {
	const { rows } = await ctx.n8nDb.query(
		`SELECT e.status, e."stoppedAt", d.data FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id WHERE e."workflowId" = $1 AND e.id > $2`,
		[wf, fromId],
	);
	const items = [];
	let count = 0;
	let lastStop = 0;
	let errors = 0;
	for (const r of rows) {
		if (r.status !== 'success') errors++;
		const runs = r.data ? flatted.parse(r.data)?.resultData?.runData?.Work : undefined;
		if (!runs?.length) continue;
		count++;
		lastStop = Math.max(lastStop, new Date(r.stoppedAt).getTime());
		for (const it of runs[0].data?.main?.[0] ?? []) {
			const t = taskOf[v](it.json);
			items.push({ i: Number(t?.i), sentAt: Number(t?.sentAt), t0: Number(it.json.t0) });
		}
	}
	return { items, count, lastStop, errors };
}

/** One phase of one variant: sends n tasks (burst or paced) and reads what the executions saw. */
async function phase(ctx, v, prod, { from, n, gapMs }) {
	const wf = `drain-${v}`;
	const fromId = (await ctx.n8nDb.query(`SELECT coalesce(max(id), 0)::int AS id FROM execution_entity`)).rows[0].id;
	const before = await cpuSnapshot(ctx);
	const deadline = Date.now() + DRAIN_TIMEOUT_MS;
	const start = await within(send(prod, from, n, gapMs), DRAIN_TIMEOUT_MS, 'sending');
	const lost = { tasks: [] };
	const ok = await waitDrained(ctx, wf, fromId, doneCheck(ctx, v, wf, fromId, n, lost), deadline);
	const after = await cpuSnapshot(ctx);
	if (!ok) throw new Error(`${n} tasks not drained within ${DRAIN_TIMEOUT_MS} ms (${await leftOver(ctx, v, wf, fromId)})`);
	// Tasks whose finished execution n8n never reported to the trigger: completed here with their
	// lease tokens, as the trigger would have done (else they wait for their lease and run again).
	if (lost.tasks.length > 0) {
		await Q.complete(db, ledgerSchemaOf(schema), lost.tasks.map((r) => ({ taskId: r.id, leaseToken: r.lease_token })));
		log(`${ctx.mode} ${v}: n8n handed back no run for ${lost.tasks.length} finished execution(s); their tasks were completed by the benchmark (in use they run again after their lease)`);
	}
	const seen = await workItems(ctx, v, wf, fromId);
	const ids = new Set(seen.items.map((x) => x.i));
	if (seen.errors) throw new Error(`${seen.errors} executions did not succeed`);
	if (ids.size !== n || seen.items.length !== n) throw new Error(`Work saw ${ids.size} distinct of ${n} tasks in ${seen.items.length} items`);
	const cpu = (k) => round((cpuSecondsBetween(before[k], after[k]) * 1000) / n, 3);
	return {
		seconds: round((seen.lastStop - start) / 1000, 2),
		tasksPerSecond: round(n / ((seen.lastStop - start) / 1000), 1),
		executions: seen.count,
		unreportedRuns: lost.tasks.length,
		pickupMs: summarize(seen.items.map((x) => x.t0 - x.sentAt)),
		cpuMsPerTask: { n8n: cpu('n8n'), postgres: cpu('postgres'), rabbitmq: cpu('rabbitmq') },
	};
}

// ---------------------------------------------------------------------------------------------
// One mode: an n8n (and its workers), every variant in turn.
let tarball;
async function runMode(mode) {
	const prefix = `drain${randomBytes(4).toString('hex')}`;
	const queueEnv = mode === 'queue' ? { EXECUTIONS_MODE: 'queue', QUEUE_BULL_REDIS_HOST: REDIS.host, QUEUE_BULL_REDIS_PORT: String(REDIS.port), QUEUE_BULL_PREFIX: prefix } : {};
	const extraEnv = { ...queueEnv, EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all', EXECUTIONS_DATA_SAVE_ON_ERROR: 'all', N8N_LOG_LEVEL: 'warn' };
	tarball ??= await harness.packPackage({ build: process.env.DRAIN_NO_BUILD !== '1' });
	const mainEnv = process.env.DRAIN_N8N_NODE_OPTIONS ? { ...extraEnv, NODE_OPTIONS: process.env.DRAIN_N8N_NODE_OPTIONS } : extraEnv;
	const n8n = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, tarball, extraEnv: mainEnv });
	const workers = [];
	const procs = [];
	let n8nDb;
	let channel;
	const out = (result.modes[mode] = { variants: {} });
	try {
		const creds = [ledgerCredential(DATABASE_URL, schema), postgresCredential(DATABASE_URL)];
		if (variants.includes('rabbitmq')) creds.push({ id: 'rabbit', name: 'RabbitMQ', type: 'rabbitmq', data: { hostname: '127.0.0.1', port: AMQP_PORT, username: 'guest', password: 'guest', vhost: '/' } });
		await n8n.importCredentials(creds);
		if (variants.includes('rabbitmq')) {
			const ch = await amqpConn.createChannel();
			await ch.assertQueue(rabbitQueue(mode), { durable: true });
			await ch.close();
		}
		const published = await importAndPublish(n8n, variants.map((v) => workflow(mode, v)), skipped, log, (wf) => `${mode} ${wf.id.replace(/^drain-/, '')}`);
		const live = variants.filter((v) => published.includes(`drain-${v}`));
		procs.push(await n8n.start());
		if (live.includes('webhook')) await n8n.waitForWebhooks([{ path: `drain-${mode}` }]);
		if (mode === 'queue') {
			for (let i = 0; i < 2; i++) {
				const w = await harness.createN8nInstance({
					databaseUrl: DATABASE_URL,
					n8nDatabase: n8n.database.database,
					encryptionKey: n8n.encryptionKey,
					tarball,
					// The harness sees a worker ready by its info-level log line; workers log two lines per job at info (n8n's default level).
					extraEnv: { ...extraEnv, N8N_LOG_LEVEL: 'info', WEBHOOK_URL: `${n8n.url}/` },
				});
				workers.push(w);
				procs.push(await w.spawn('worker'));
			}
		}
		n8nDb = new pg.Client({ connectionString: n8n.database.url });
		await n8nDb.connect();
		const ctx = {
			mode,
			n8n,
			n8nDb,
			groups: () => procs.map((p) => p.pid),
			amqpChannel: async () => (channel ??= await amqpConn.createConfirmChannel()),
		};
		// n8n activates published workflows after it answers /healthz: wait for each trigger's first execution in the warm-up.
		let from = 1;
		for (const v of live) {
			const part = `${mode} ${v}`;
			try {
				const prod = await producer(ctx, v);
				await phase(ctx, v, prod, { from, n: WARMUP, gapMs: 0 });
				from += WARMUP;
				const drain = await phase(ctx, v, prod, { from, n: N, gapMs: 0 });
				from += N;
				const paced = await phase(ctx, v, prod, { from, n: PACED_N, gapMs: 1000 / PACED_RATE });
				from += PACED_N;
				out.variants[v] = { drain, paced };
				log(
					`${mode} ${v}: ${drain.tasksPerSecond} tasks/s (${N} in ${drain.seconds} s, ${drain.executions} executions), CPU ms/task n8n ${drain.cpuMsPerTask.n8n} pg ${drain.cpuMsPerTask.postgres} rabbitmq ${drain.cpuMsPerTask.rabbitmq}; paced pickup p50 ${paced.pickupMs.median} p99 ${paced.pickupMs.p99} ms`,
				);
			} catch (e) {
				skip(part, String(e.message).split('\n')[0]);
				from += N + PACED_N + WARMUP;
			}
		}
	} finally {
		await channel?.close().catch(() => undefined);
		await n8nDb?.end().catch(() => undefined);
		for (const w of workers) await w.cleanup().catch(() => undefined);
		await n8n.cleanup().catch(() => undefined);
		if (mode === 'queue') await deleteRedisKeys(prefix);
		if (variants.includes('rabbitmq') && amqpConn) {
			const ch = await amqpConn.createChannel().catch(() => undefined);
			await ch?.deleteQueue(rabbitQueue(mode)).catch(() => undefined);
			await ch?.close().catch(() => undefined);
		}
	}
}

try {
	for (const m of modes) {
		try {
			await runMode(m);
		} catch (e) {
			skip(`${m} mode`, String(e.message).split('\n')[0]);
		}
	}
} finally {
	await amqpConn?.close().catch(() => undefined);
	await db.query(`DROP SCHEMA IF EXISTS "${plain}" CASCADE`).catch(() => undefined);
	await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
	await db.end().catch(() => undefined);
	agent.destroy();
}

// ---------------------------------------------------------------------------------------------
// Goals, per mode, against RabbitMQ's figures of the same run.
for (const [mode, m] of Object.entries(result.modes)) {
	const r = m.variants.rabbitmq;
	if (!r) {
		log(`goals of ${mode} mode not judged: no RabbitMQ figures in this run`);
		continue;
	}
	// The trigger with a Complete node (pdq-b1, pdq-b50: goals named as before) and settling by itself (the -auto variants).
	const tag = (name) => (isAuto(name) ? ` (${name}, no Complete node)` : '');
	for (const [name, b1] of [
		['pdq-b1', m.variants['pdq-b1']],
		['pdq-b1-auto', m.variants['pdq-b1-auto']],
	]) {
		if (!b1) continue;
		result.targets.push({ what: `n8n ${mode} mode: Priority Dequeue Trigger batch 1${tag(name)} drain ≥ RabbitMQ Trigger's (tasks/s)`, value: b1.drain.tasksPerSecond, limit: `≥ ${r.drain.tasksPerSecond}`, met: b1.drain.tasksPerSecond >= r.drain.tasksPerSecond });
		const limit = round(r.paced.pickupMs.median * 1.1, 1);
		result.targets.push({ what: `n8n ${mode} mode: Priority Dequeue Trigger batch 1${tag(name)} pickup p50 ≤ 1.1 × RabbitMQ Trigger's (ms)`, value: b1.paced.pickupMs.median, limit: `≤ ${limit}`, met: b1.paced.pickupMs.median <= limit });
	}
	for (const [name, b50] of [
		['pdq-b50', m.variants['pdq-b50']],
		['pdq-b50-auto', m.variants['pdq-b50-auto']],
	]) {
		if (!b50) continue;
		const limit = round(r.drain.tasksPerSecond * 10, 1);
		result.targets.push({ what: `n8n ${mode} mode: Priority Dequeue Trigger batch 50${tag(name)} drain ≥ 10 × RabbitMQ Trigger's (tasks/s)`, value: b50.drain.tasksPerSecond, limit: `≥ ${limit}`, met: b50.drain.tasksPerSecond >= limit });
	}
}

const rows = [];
for (const [mode, m] of Object.entries(result.modes)) {
	for (const [v, x] of Object.entries(m.variants)) {
		rows.push(
			`${mode.padEnd(8)} ${v.padEnd(12)} ${String(x.drain.tasksPerSecond).padStart(8)} ${`${x.paced.pickupMs.median} / ${x.paced.pickupMs.p99}`.padStart(14)} ${`${x.drain.pickupMs.median} / ${x.drain.pickupMs.p99}`.padStart(16)} ${String(x.drain.cpuMsPerTask.n8n).padStart(8)} ${String(x.drain.cpuMsPerTask.postgres).padStart(8)} ${String(x.drain.cpuMsPerTask.rabbitmq).padStart(8)}`,
		);
	}
}
log(
	`N ${N} per drain, ${PACED_N} paced at ${PACED_RATE}/s, ${PARALLEL} executions in parallel\n` +
		`mode     variant       tasks/s  paced p50/p99  drain p50/p99 ms  n8n CPU   pg CPU  rmq CPU (ms per task)\n${rows.join('\n')}`,
);
for (const t of result.targets) log(`goal: ${t.what}: ${t.value} (${t.limit}) ${t.met ? 'met' : 'missed'}`);
for (const s of skipped) log(`n8n-drain: skipped ${s.part}: ${s.reason}`);
finish();
