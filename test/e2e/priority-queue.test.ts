/**
 * The queue's example workflows in a real n8n (issue 4: "one real-n8n run of the example workflows").
 *
 * The package is built, packed and installed into a fresh n8n user folder the way the Community
 * Nodes UI installs it; n8n (regular mode) runs on Postgres. The four example workflows are imported
 * unchanged (workflows/priority-producer.json, priority-consumer.json, priority-worker.json,
 * dead-letter-report.json) with one credential, the producer, consumer and worker are published,
 * and n8n is started. Then:
 *   - a burst of tasks is POSTed to the producer's webhook (high, normal, low; one that always
 *     fails, with 3 attempts; one delayed), each answered 202 with its task id;
 *   - the same dedupe key again, while that task is still pending, returns the existing task;
 *   - the consumer (trigger → dequeue → Execute Workflow → complete / fail) works the queue down
 *     with nobody polling from outside: every task ends succeeded or dead;
 *   - every good task succeeded exactly once (one archive row, one attempt, and exactly one
 *     successful worker execution per task, matched by execution id); the failing task was retried
 *     with backoff and went dead exactly once, with its last error;
 *   - the dead-letter report (n8n execute, Manual Trigger) lists the dead task.
 * Pickup latency (enqueue → claim) is printed, not asserted.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { harness, nodeRequire, type CliResult, type Json, type N8nInstance, type RunResult } from '../helpers/n8nHarness';
import { waitFor } from '../helpers/wait';

// The harness is plain ESM (scripts/lib/*.mjs); see idempotent-payment.test.ts for why it is
// loaded with Node's own require().
const ROOT = path.resolve(__dirname, '../..');
const WF = {
	producer: 'pdqProducer00001',
	consumer: 'pdqConsumer00001',
	worker: 'priority-worker',
	report: 'pdqDeadReport001',
};
const DB_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const FAIL_ATTEMPTS = 3;
const DELAY_SECONDS = 10;
const SETTLE_TIMEOUT_MS = 150_000;

const log = (m: string) => process.stdout.write(`[e2e queue] ${m}\n`);

interface Posted {
	body: Json;
	status: number;
	answer: Json;
	sentAt: number;
}

/** The burst: ids are the dedupe keys. */
function burst(run: string): Json[] {
	const t = (id: string, extra: Json = {}) => ({ id: `${run}-${id}`, ...extra });
	return [
		t('bulk-1', { bulk: true }),
		t('bulk-2', { bulk: true }),
		t('normal-1'),
		t('bulk-3', { bulk: true }),
		t('normal-2'),
		t('vip-1', { vip: true }),
		t('normal-3'),
		t('vip-2', { vip: true }),
		t('urgent-1', { urgent: true }),
		t('normal-4'),
		t('vip-3', { vip: true }),
		t('fails', { fail: true, maxAttempts: FAIL_ATTEMPTS }),
		t('delayed', { delaySeconds: DELAY_SECONDS }),
	];
}

const expectedGroup = (b: Json) => (b.vip || b.urgent ? 'high' : b.bulk ? 'low' : 'normal');

function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return NaN;
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

describe('Priority Dequeue example workflows in a real n8n', () => {
	let n8n: N8nInstance | undefined;
	let pg: Client;
	let n8nDb: Client | undefined;
	let parseFlatted: (s: string) => any;
	const schema = `e2e_q_${randomBytes(5).toString('hex')}`;
	const runTag = `r${randomBytes(3).toString('hex')}`;
	const posted: Posted[] = [];
	let dedupeAnswer: Posted | undefined;
	let webhookUrl = '';

	beforeAll(async () => {
		pg = new Client({ connectionString: DB_URL });
		await pg.connect();

		let t = Date.now();
		const rt = await harness.ensureN8n();
		// n8n stores run data in the "flatted" format; the runtime n8n brings the parser along.
		parseFlatted = (nodeRequire(path.join(rt.dir, 'node_modules', 'flatted')) as { parse(s: string): any }).parse;
		log(`n8n runtime ready in ${Date.now() - t} ms`);
		t = Date.now();
		const tarball = await harness.packPackage();
		log(`built and packed ${path.basename(tarball)} in ${Date.now() - t} ms`);
		t = Date.now();
		n8n = await harness.createN8nInstance({ databaseUrl: DB_URL, tarball });
		log(`n8n instance with the package installed in ${Date.now() - t} ms (log: ${n8n.logFile})`);

		t = Date.now();
		await n8n.importCredentials({
			id: 'ledger-pg',
			name: 'Operation Ledger Postgres account',
			type: 'operationLedgerPostgresApi',
			data: {
				connectionType: 'connectionString',
				connectionString: DB_URL,
				ssl: 'disable',
				schema,
				autoApplySchema: true,
				maxConnections: 5,
				// Short, so that the 503 case below (a table lock held past it) answers quickly.
				lockTimeoutMs: 1000,
			},
		});
		// The workflow files exactly as shipped (one import call for all four).
		await n8n.importWorkflow(
			['priority-worker', 'priority-producer', 'priority-consumer', 'dead-letter-report'].map((f) =>
				JSON.parse(readFileSync(path.join(ROOT, 'workflows', `${f}.json`), 'utf8')),
			),
		);
		// publish:workflow only writes the database ("changes will not take effect if n8n is
		// running"), so publish first and start after: n8n activates published workflows on start.
		for (const id of [WF.worker, WF.producer, WF.consumer]) await n8n.publishWorkflow(id);
		log(`imported the credential and 4 workflows, published 3, in ${Date.now() - t} ms`);

		n8nDb = new Client({ connectionString: n8n.database.url });
		await n8nDb.connect();
		const published = await n8nDb.query(`SELECT id FROM workflow_entity WHERE "activeVersionId" IS NOT NULL ORDER BY id`);
		expect(published.rows.map((r) => r.id).sort()).toEqual([WF.worker, WF.consumer, WF.producer].sort());

		t = Date.now();
		// /healthz answers before n8n has activated the published workflows (webhooks answer 404
		// until then): wait until n8n serves the producer's webhook.
		await n8n.start();
		await n8n.waitForWebhooks([{ path: 'priority-task' }]);
		log(`n8n start ready in ${Date.now() - t} ms at ${n8n.url}`);
		webhookUrl = `${n8n.url}/webhook/priority-task`;
	}, 20 * 60_000);

	afterAll(async () => {
		// N8N_E2E_KEEP=1 keeps the instance folder (n8n.log, user folder) and n8n's database.
		await n8nDb?.end().catch(() => undefined);
		await n8n?.cleanup().catch(() => undefined);
		if (pg) {
			await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
			await pg.end().catch(() => undefined);
		}
	}, 120_000);

	async function post(body: Json): Promise<Posted> {
		const sentAt = Date.now();
		const res = await fetch(webhookUrl, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(body),
			signal: AbortSignal.timeout(30_000),
		});
		const text = await res.text();
		let answer: Json;
		try {
			answer = JSON.parse(text);
		} catch {
			answer = { raw: text };
		}
		return { body, status: res.status, answer, sentAt };
	}

	/** Executions of n8n as rows { id, workflowId, status, mode, data } (data parsed), oldest first. */
	async function executions(workflowId: string, withData = false): Promise<Json[]> {
		const { rows } = await n8nDb!.query(
			`SELECT e.id::text AS id, e."workflowId", e.status, e.mode, e."startedAt", e."stoppedAt"${withData ? ', d.data' : ''}
			   FROM execution_entity e ${withData ? 'LEFT JOIN execution_data d ON d."executionId" = e.id' : ''}
			  WHERE e."workflowId" = $1 ORDER BY e.id`,
			[workflowId],
		);
		return rows.map((r) => (withData ? { ...r, data: r.data ? parseFlatted(r.data) : undefined } : r));
	}

	const goodOnes = () => posted.filter((p) => !p.body.fail);
	const failing = () => posted.find((p) => p.body.fail)!;

	test('the producer answers a burst with 202 and task ids; the same dedupe key again returns the existing task', async () => {
		const bodies = burst(runTag);
		const t0 = Date.now();
		const answers = await Promise.all(bodies.map((b) => post(b)));
		posted.push(...answers);
		log(`burst of ${bodies.length} POSTs answered in ${Date.now() - t0} ms`);

		for (const p of posted) {
			expect({ id: p.body.id, status: p.status }).toEqual({ id: p.body.id, status: 202 });
			expect(p.answer).toMatchObject({ accepted: true, group: expectedGroup(p.body), deduplicated: false });
			expect(p.answer.taskId).toMatch(/^\d+$/);
		}
		expect(new Set(posted.map((p) => p.answer.taskId)).size).toBe(bodies.length);

		// The delayed task is pending for DELAY_SECONDS: posting its id again must not make a second task.
		const delayed = posted.find((p) => p.body.delaySeconds)!;
		dedupeAnswer = await post({ ...delayed.body });
		log(`re-POST of ${delayed.body.id}: ${dedupeAnswer.status} ${JSON.stringify(dedupeAnswer.answer)}`);
		expect(dedupeAnswer.status).toBe(202);
		expect(dedupeAnswer.answer).toMatchObject({ accepted: true, taskId: delayed.answer.taskId, deduplicated: true });

		// A refused item (a control character in the dedupe key) must not look accepted: 422 and the error text.
		const refused = await post({ id: `refused-${runTag}\u0001x` });
		log(`refused POST: ${refused.status} ${JSON.stringify(refused.answer)}`);
		expect(refused.status).toBe(422);
		expect(refused.answer).toMatchObject({ accepted: false });
		expect(String(refused.answer.error)).toContain('control character');

		// Input the example refuses before Enqueue (nothing clamped or guessed): 422 with the reason.
		// An object id used to become the dedupe key "[object Object]" (every such task collided) and
		// an integer id beyond 2^53 arrives rounded by n8n (different ids collided).
		for (const [bad, reason] of [
			// No id, no dedupe key: a client's retry (after a 503, or a lost answer) would enqueue twice.
			[{ vip: true }, /id is required/],
			[{ id: { customer: `alice-${runTag}` } }, /id must be a string/],
			[{ id: 12345678901234567890 }, /id must be a string/],
			[{ id: `big-${runTag}`, delaySeconds: 1e308 }, /delaySeconds must be a number from 0 to 86400/],
			[{ id: `att-${runTag}`, maxAttempts: 0 }, /maxAttempts must be a whole number from 1 to 10/],
			[{ id: `vip-${runTag}`, vip: 'true' }, /vip must be true or false/],
			[[1, 2, 3], /the body must be a JSON object/],
		] as Array<[Json, RegExp]>) {
			const r = await post(bad);
			expect({ body: bad, status: r.status }).toEqual({ body: bad, status: 422 });
			expect(r.answer).toMatchObject({ accepted: false });
			expect(String(r.answer.error)).toMatch(reason);
		}


		const { rows } = await pg.query(
			`SELECT (SELECT count(*) FROM "${schema}".queue_tasks WHERE queue = 'jobs')::int
			      + (SELECT count(*) FROM "${schema}".queue_tasks_archive WHERE queue = 'jobs')::int AS n`,
		);
		expect(rows[0].n).toBe(bodies.length);
	}, 3 * 60_000);

	test('the consumer works the queue down: each good task succeeds once, the failing one goes dead once', async () => {
		expect(posted.length).toBeGreaterThan(0);
		const ids = posted.map((p) => p.answer.taskId);
		const t0 = Date.now();
		let settled: { archived: Json[]; live: Json[] } = { archived: [], live: [] };
		const isSettled = async () => {
			const archived = (
				await pg.query(`SELECT * FROM "${schema}".queue_tasks_archive WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids])
			).rows;
			const live = (await pg.query(`SELECT * FROM "${schema}".queue_tasks WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids])).rows;
			settled = { archived, live };
			return live.every((r) => r.status === 'dead') && archived.length + live.length === ids.length;
		};
		await waitFor(isSettled, { what: `all ${ids.length} tasks settled`, timeoutMs: SETTLE_TIMEOUT_MS, intervalMs: 500 }).catch((e: Error) => {
			const open = settled.live.filter((r) => r.status !== 'dead');
			throw new Error(
				`${e.message}: ${JSON.stringify(open.map((r) => ({ id: r.id, status: r.status, attempts: r.attempts, last_error: r.last_error })))}\n` +
					`--- n8n log (tail) ---\n${n8n!.logTail(80)}`,
			);
		});
		log(`all ${ids.length} tasks settled ${Date.now() - t0} ms after the burst's answers`);

		// n8n has finished writing the executions that settled them.
		await waitFor(
			async () => (await n8nDb!.query(`SELECT count(*)::int AS n FROM execution_entity WHERE status IN ('new', 'running', 'waiting')`)).rows[0].n === 0,
			{ what: 'no n8n execution new, running or waiting', timeoutMs: 30_000, intervalMs: 500 },
		);

		// Every good task: one archive row, succeeded at the first attempt, with the worker's result.
		const byId = new Map(settled.archived.map((r) => [String(r.id), r]));
		for (const p of goodOnes()) {
			const row = byId.get(p.answer.taskId);
			expect({ ref: p.body.id, status: row?.status, attempts: row?.attempts }).toEqual({ ref: p.body.id, status: 'succeeded', attempts: 1 });
			expect(row!.priority_group).toBe(expectedGroup(p.body));
			expect(row!.result).toMatchObject({ done: true, taskId: p.answer.taskId, ref: p.body.id, attempt: 1 });
		}
		expect(settled.archived).toHaveLength(goodOnes().length);

		// The failing task: dead in the hot table, all attempts used, its last error kept; never archived.
		const f = failing();
		expect(byId.has(f.answer.taskId)).toBe(false);
		expect(settled.live).toHaveLength(1);
		const dead = settled.live[0];
		expect({ id: String(dead.id), status: dead.status, attempts: dead.attempts, max: dead.max_attempts }).toEqual({
			id: f.answer.taskId,
			status: 'dead',
			attempts: FAIL_ATTEMPTS,
			max: FAIL_ATTEMPTS,
		});
		expect(dead.dead_at).toBeInstanceOf(Date);
		expect(dead.last_error).toContain(`the payload asked to fail (attempt ${FAIL_ATTEMPTS} of ${FAIL_ATTEMPTS})`);
		log(`dead task #${dead.id}: ${dead.last_error}`);

		// The worker ran exactly once per good task (matched by its own execution id) and once per
		// attempt of the failing task.
		const workerRuns = await executions(WF.worker);
		const okRuns = workerRuns.filter((e) => e.status === 'success');
		const errorRuns = workerRuns.filter((e) => e.status === 'error');
		log(`worker executions: ${okRuns.length} success, ${errorRuns.length} error, ${workerRuns.length} in all`);
		expect(okRuns).toHaveLength(goodOnes().length);
		expect(errorRuns).toHaveLength(FAIL_ATTEMPTS);
		expect(workerRuns).toHaveLength(goodOnes().length + FAIL_ATTEMPTS);
		const resultExecIds = settled.archived.map((r) => String(r.result.workerExecutionId)).sort();
		expect(resultExecIds).toEqual(okRuns.map((e) => String(e.id)).sort());

		// The consumer's own runs: every Complete says completed; the failing task's Fail calls say
		// retry_scheduled, retry_scheduled, dead (dead exactly once); no lease was ever lost.
		const consumerRuns = await executions(WF.consumer, true);
		expect(consumerRuns.length).toBeGreaterThan(0);
		const claims: Json[] = [];
		const completes: Json[] = [];
		const fails: Json[] = [];
		for (const e of consumerRuns) {
			expect({ id: e.id, status: e.status }).toEqual({ id: e.id, status: 'success' });
			const run = { data: e.data } as RunResult;
			claims.push(...(harness.outputItems(run, 'Dequeue Tasks')?.[1] ?? []));
			completes.push(...(harness.outputItems(run, 'Complete Task')?.[1] ?? []));
			fails.push(...(harness.outputItems(run, 'Fail Task')?.[1] ?? []));
		}
		log(`consumer executions: ${consumerRuns.length} (modes ${[...new Set(consumerRuns.map((e) => e.mode))].join(', ')}), ${claims.length} claims`);
		expect(completes.map((c) => c.outcome)).toEqual(goodOnes().map(() => 'completed'));
		expect(completes.map((c) => c.taskId).sort()).toEqual(goodOnes().map((p) => p.answer.taskId).sort());
		expect(fails.map((x) => ({ taskId: x.taskId, outcome: x.outcome }))).toEqual([
			...Array.from({ length: FAIL_ATTEMPTS - 1 }, () => ({ taskId: f.answer.taskId, outcome: 'retry_scheduled' })),
			{ taskId: f.answer.taskId, outcome: 'dead' },
		]);

		// Claims: sequence numbers without repeats (one sequence; gaps allowed); each
		// good task claimed once, the failing one once per attempt.
		const seqs = claims.map((c) => Number(c.claimSeq)).sort((a, b) => a - b);
		expect(seqs).toHaveLength(goodOnes().length + FAIL_ATTEMPTS);
		expect(new Set(seqs).size).toBe(seqs.length);
		for (const p of goodOnes()) {
			expect(claims.filter((c) => c.taskId === p.answer.taskId).map((c) => c.attempt)).toEqual([1]);
		}
		const failClaims = claims.filter((c) => c.taskId === f.answer.taskId).sort((a, b) => a.attempt - b.attempt);
		expect(failClaims.map((c) => c.attempt)).toEqual(Array.from({ length: FAIL_ATTEMPTS }, (_, k) => k + 1));

		// The retries waited their backoff (Fail Task: base 5 s, equal jitter, so at least 2.5 s,
		// then 5 s after the failed claim), each retry got the previous attempt's error, and the
		// retry time Fail reported is when the task became claimable again (database clock).
		const retryWaits: number[] = [];
		for (let k = 1; k < failClaims.length; k++) {
			const prev = failClaims[k - 1];
			const claimedPrev = new Date(prev.availableAt).getTime() + prev.waitedSeconds * 1000;
			const availableNext = new Date(failClaims[k].availableAt).getTime();
			retryWaits.push(availableNext - claimedPrev);
			expect(availableNext - claimedPrev).toBeGreaterThanOrEqual(2_500 * 2 ** (k - 1));
			expect(new Date(fails[k - 1].retryAt).getTime()).toBe(availableNext);
			expect(failClaims[k].lastError).toContain(`the payload asked to fail (attempt ${k} of ${FAIL_ATTEMPTS})`);
		}

		// The delayed task was not claimed before its time.
		const delayed = posted.find((p) => p.body.delaySeconds)!;
		const dRow = byId.get(delayed.answer.taskId)!;
		expect((dRow.finished_at.getTime() - dRow.enqueued_at.getTime()) / 1000).toBeGreaterThanOrEqual(DELAY_SECONDS - 0.5);

		// Figures (printed, not asserted): enqueue → claim latency from the database clock, and
		// POST sent → worker done from the test's clock, for first attempts of the undelayed tasks.
		const prompt = goodOnes().filter((p) => !p.body.delaySeconds);
		const waits = prompt.map((p) => Number(byId.get(p.answer.taskId)!.result.waitedSeconds) * 1000).sort((a, b) => a - b);
		const endToEnd = prompt
			.map((p) => new Date(byId.get(p.answer.taskId)!.result.processedAt).getTime() - p.sentAt)
			.sort((a, b) => a - b);
		log(
			`enqueue → claim (ms) over ${waits.length} tasks: min ${Math.round(waits[0])}, median ${Math.round(percentile(waits, 50))}, ` +
				`max ${Math.round(waits[waits.length - 1])}`,
		);
		log(
			`POST sent → worker done (ms): min ${endToEnd[0]}, median ${percentile(endToEnd, 50)}, max ${endToEnd[endToEnd.length - 1]}`,
		);
		const order = [...settled.archived]
			.sort((a, b) => Number(a.result.claimSeq) - Number(b.result.claimSeq))
			.map((r) => `${r.result.claimSeq}:${r.priority_group}`);
		log(`claim order of the good tasks: ${order.join(' ')}`);
		log(`delayed task: enqueued → finished ${dRow.finished_at.getTime() - dRow.enqueued_at.getTime()} ms (delay ${DELAY_SECONDS} s)`);
		log(`failing task: retry ${retryWaits.map((w, k) => `${k + 2} claimable ${Math.round(w)} ms after claim ${k + 1}`).join(', ')}`);
	}, 5 * 60_000);

	test('the dead-letter report lists the dead task with its last error', async () => {
		const f = failing();
		expect(f).toBeDefined();
		const r = await n8n!.execute(WF.report);
		log(`dead-letter report: n8n execute took ${r.__ms} ms; nodes run: ${harness.nodesRun(r).join(' → ')}`);
		expect(r.data.resultData.error).toBeUndefined();

		const stats = harness.outputItems(r, 'Queue Stats')![1][0];
		expect(stats).toMatchObject({ queue: 'jobs', dead: 1, depth: 0, inFlight: 0 });
		expect(stats.deadTasks).toHaveLength(1);
		expect(stats.deadTasks[0]).toMatchObject({ taskId: f.answer.taskId, group: 'normal' });
		expect(stats.deadTasks[0].lastError).toContain('the payload asked to fail');

		expect(harness.outputsTaken(r, 'Needs Attention?')).toEqual([0]);
		const report = harness.outputItems(r, 'Compose Report')![0][0];
		log(`report text:\n${report.text}`);
		expect(report.text).toContain('Queue jobs: 1 dead');
		expect(report.text).toContain(`#${f.answer.taskId} [normal]`);
		expect(report.text).toContain(`the payload asked to fail (attempt ${FAIL_ATTEMPTS} of ${FAIL_ATTEMPTS})`);
		expect(harness.nodesRun(r)).toContain('Send Notification (placeholder)');

		// Retention ran too, and kept everything (30 and 14 days).
		const purged = harness.outputItems(r, 'Purge Finished')![1][0];
		expect(purged).toMatchObject({ deadArchived: 0, archiveDeleted: 0 });
		const { rows } = await pg.query(`SELECT status FROM "${schema}".queue_tasks WHERE id = $1`, [f.answer.taskId]);
		expect(rows).toEqual([{ status: 'dead' }]);
	}, 5 * 60_000);

	// Last, because the lock also makes the consumer's claims of this moment fail.
	test('the producer answers 503 (retry later), never 422, when the enqueue was not recorded for a reason that passes', async () => {
		// Not recorded for a reason that passes (here: the table locked past the credential's lock
		// timeout; the same for the database unreachable): 503 with Retry-After, never 422, so a
		// client retries instead of dropping the task.
		const locker = new Client({ connectionString: DB_URL });
		await locker.connect();
		try {
			await locker.query('BEGIN');
			await locker.query(`LOCK TABLE "${schema}".queue_tasks IN ACCESS EXCLUSIVE MODE`);
			const busy = await post({ id: `busy-${runTag}` });
			log(`POST while the table is locked: ${busy.status} ${JSON.stringify(busy.answer)}`);
			expect(busy.status).toBe(503);
			expect(busy.answer).toMatchObject({ accepted: false, retryable: true });
		} finally {
			await locker.query('ROLLBACK').catch(() => undefined);
			await locker.end();
		}
	}, 2 * 60_000);
});
