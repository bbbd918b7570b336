/**
 * Case 5: a bounded soak. Concurrent workers run mixed Reserve → (fake provider write) → Confirm,
 * Reconcile claim → provider lookup → resolve, and enqueue / dequeue → complete | fail | abandon,
 * on a private Postgres, while a killer terminates the workers' own backends at random and the
 * server is restarted once (pg_ctl stop -m immediate + start). Then everything is drained and
 * every invariant is checked:
 *   - one proceed per key and attempt (workers' view and the event log), and never two writes at
 *     the provider for one operation key (no duplicate side effect);
 *   - every operation is in a truthful state: succeeded exactly when the provider has its write,
 *     with the provider's reference;
 *   - no task held twice: each (task, attempt) claimed once, a task re-claimed only after its
 *     previous lease ended or was settled, completed at most once;
 *   - no task lost: every task an enqueue reported is pending, processing, dead or archived as
 *     succeeded; every task a worker completed is archived as succeeded.
 * Duration: HARDENING_SOAK_SECONDS (default 40).
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { closeAllPools } from '../../../src/db/pool';
import { testCredentials } from '../../helpers/fakeExecute';
import { sleep, startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';
import { waitFor } from '../../helpers/wait';
import { claim, complete, confirm, dequeue, enqueue, queueOp, reserve, resolve, settle } from './run';

const SECONDS = Number(process.env.HARDENING_SOAK_SECONDS ?? 40);
jest.setTimeout((SECONDS + 120) * 1000);

const SCHEMA = 'hz_soak';
const APP = 'n8n-nodes-operation-ledger';
const LEASE = 3;
const SETTLE = 2;
const TASK_LEASE = 3;
/** Seconds a reconcile claim holds its operations. */
const RECONCILE_CLAIM = 10;
let pg: PrivatePostgres;

beforeAll(async () => {
	pg = await startPrivatePostgres({ name: 'soak' });
	const pool = new Pool({ connectionString: pg.url, max: 1 });
	await migrate(pool, ledgerSchema(SCHEMA), true);
	await pool.end();
});
afterAll(async () => {
	await closeAllPools();
	await pg?.destroy();
});

/** The outside system: idempotent by Idempotency-Key; remembers which operation each write was for. */
class FakeProvider {
	byIdem = new Map<string, { opKey: string; ref: string }>();
	perform(idem: string, opKey: string): string {
		const found = this.byIdem.get(idem);
		if (found) return found.ref;
		const ref = `pay_${randomBytes(5).toString('hex')}`;
		this.byIdem.set(idem, { opKey, ref });
		return ref;
	}
	lookup(idem: string) {
		return this.byIdem.get(idem);
	}
}

const rnd = (n: number) => Math.floor(Math.random() * n);

it(`soak: ${SECONDS} s of mixed work with random kills and a restart keeps every invariant`, async () => {
	const creds = testCredentials(pg.url, SCHEMA, { maxConnections: 6, autoApplySchema: false });
	const provider = new FakeProvider();
	const stats: Record<string, number> = {};
	const bump = (k: string, n = 1) => (stats[k] = (stats[k] ?? 0) + n);
	const proceeds = new Map<string, number>(); // key#attempt → proceeds seen by workers
	const enqueued = new Set<string>();
	const completed = new Set<string>();
	interface ClaimRec { taskId: string; attempt: number; token: string; claimAt: number; leaseEnd: number; settledAt?: number }
	const claims: ClaimRec[] = [];
	const started = Date.now();
	const deadline = started + SECONDS * 1000;
	let stop = false;

	async function ledgerStep() {
		// A moving window of 12 keys: workers contend for the same keys while new ones keep coming.
		const base = Math.floor((Date.now() - started) / 250);
		const batch = Array.from(new Set(Array.from({ length: 1 + rnd(4) }, () => `soak:op:${base + rnd(12)}`)));
		const r = await settle(reserve(creds, batch, { leaseSeconds: LEASE, settleSeconds: SETTLE, request: (i: number) => ({ key: batch[i] }) }));
		if (!r.ok) {
			bump('reserve_error');
			return;
		}
		const mine = r.value[1].map((it) => it.json.ledger as { operationKey: string; leaseToken: string; attempt: number; idempotencyKey: string; leaseExpiresAt: string });
		for (const l of mine) proceeds.set(`${l.operationKey}#${l.attempt}`, (proceeds.get(`${l.operationKey}#${l.attempt}`) ?? 0) + 1);
		bump('proceed', mine.length);
		const reports: Array<{ key: string; token: string; outcome: string; ref?: string; reason?: string }> = [];
		for (const l of mine) {
			// A careful worker sends only while its lease is comfortably live.
			const live = Date.parse(l.leaseExpiresAt) - Date.now() > 1000;
			const roll = rnd(10);
			if (!live) {
				reports.push({ key: l.operationKey, token: l.leaseToken, outcome: 'failed', reason: 'lease too short to send' });
			} else if (roll < 6) {
				reports.push({ key: l.operationKey, token: l.leaseToken, outcome: 'succeeded', ref: provider.perform(l.idempotencyKey, l.operationKey) });
			} else if (roll === 6) {
				provider.perform(l.idempotencyKey, l.operationKey);
				reports.push({ key: l.operationKey, token: l.leaseToken, outcome: 'unknown', reason: 'timeout after send' });
			} else if (roll === 7) {
				reports.push({ key: l.operationKey, token: l.leaseToken, outcome: 'unknown', reason: 'timeout before send' });
			} else if (roll === 8) {
				provider.perform(l.idempotencyKey, l.operationKey); // crash after send: no confirm
				bump('crash_after_send');
			} else {
				reports.push({ key: l.operationKey, token: l.leaseToken, outcome: 'failed', reason: 'refused' });
			}
		}
		if (reports.length) {
			const c = await settle(confirm(creds, reports, { retryable: true }));
			bump(c.ok ? 'confirm_ok' : 'confirm_error');
		}
	}

	// The settle window (SETTLE s) is stored per operation by Reserve; the claim adds no extra delay.
	async function reconcileStep(settleSeconds = 0) {
		const c = await settle(claim(creds, { batchSize: 20, settleSeconds, claimSeconds: RECONCILE_CLAIM }));
		if (!c.ok) { bump('claim_error'); return; }
		const items = c.value[1].map((it) => it.json as { idempotencyKey: string; operationKey: string; reconcile: { claimToken: string } });
		if (!items.length) return;
		const rows = items.map((it) => {
			const found = provider.lookup(it.idempotencyKey);
			return { key: it.operationKey, claimToken: it.reconcile.claimToken, resolution: found ? 'happened' : 'not_happened', ref: found?.ref ?? '' };
		});
		const r = await settle(resolve(creds, rows, { maxChecks: 1000 }));
		bump(r.ok ? 'resolve_ok' : 'resolve_error');
	}

	async function queueStep() {
		if (rnd(2) === 0) {
			const e = await settle(enqueue(creds, 'soak', Array.from({ length: 1 + rnd(5) }, () => ({ r: rnd(1000) })), { priorityGroup: ['high', 'normal', 'low'][rnd(3)] }));
			if (!e.ok) { bump('enqueue_error'); return; }
			for (const it of e.value[1]) enqueued.add(it.json.taskId as string);
			bump('enqueued', e.value[1].length);
			return;
		}
		const d = await settle(dequeue(creds, 'soak', 1 + rnd(6), { leaseSeconds: TASK_LEASE }));
		if (!d.ok) { bump('dequeue_error'); return; }
		const got = d.value[1].map((it) => it.json as { taskId: string; attempt: number; leaseToken: string; leaseExpiresAt: string });
		const recs = got.map((t) => {
			const leaseEnd = Date.parse(t.leaseExpiresAt);
			const rec: ClaimRec = { taskId: t.taskId, attempt: t.attempt, token: t.leaseToken, claimAt: leaseEnd - TASK_LEASE * 1000, leaseEnd };
			claims.push(rec);
			return rec;
		});
		const toComplete = recs.filter(() => rnd(10) < 8);
		const toFail = recs.filter((r) => !toComplete.includes(r) && rnd(2) === 0); // the rest is abandoned
		if (toComplete.length) {
			const c = await settle(complete(creds, toComplete.map((r) => ({ taskId: r.taskId, leaseToken: r.token }))));
			if (!c.ok) bump('complete_error');
			else
				c.value[1].forEach((it, k) => {
					if (it.json.outcome === 'completed') {
						if (completed.has(toComplete[k].taskId)) bump('DOUBLE_COMPLETE');
						completed.add(toComplete[k].taskId);
						toComplete[k].settledAt = Date.now();
					}
				});
		}
		if (toFail.length) {
			const f = await settle(
				queueOp(creds, toFail.length, {
					operation: 'fail',
					taskSource: 'explicit',
					taskId: (i: number) => toFail[i].taskId,
					leaseToken: (i: number) => toFail[i].token,
					errorMessage: 'soak failure',
					options: { backoffBaseSeconds: 1, backoffCapSeconds: 2 },
				}),
			);
			if (!f.ok) bump('fail_error');
			else f.value[1].forEach((it, k) => (it.json.outcome === 'retry_scheduled' || it.json.outcome === 'dead') && (toFail[k].settledAt = Date.now()));
		}
	}

	async function worker(id: number) {
		while (!stop && Date.now() < deadline) {
			const roll = rnd(10);
			if (roll < 5) await ledgerStep();
			else if (roll < 7) await reconcileStep();
			else await queueStep();
			bump(`worker${id}_steps`);
		}
	}

	async function killer() {
		let restarted = false;
		while (!stop && Date.now() < deadline) {
			await sleep(1500 + rnd(2500)); // fixed on purpose: the fault schedule (a kill every 1.5-4 s) is the load under test
			if (!restarted && Date.now() > deadline - (SECONDS * 1000) / 2) {
				restarted = true;
				pg.restart('immediate');
				bump('db_restarts');
				continue;
			}
			const rows = await pg.sql<{ ok: boolean }>(
				`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid()`,
				[APP],
			);
			bump('backends_terminated', rows.filter((r) => r.ok).length);
		}
	}

	await Promise.all([...Array.from({ length: 6 }, (_, i) => worker(i)), killer()]);
	stop = true;

	// Drain: the ledger clock is moved past every lease and reconcile claim the soak took (the
	// workers have stopped, nothing else writes), then reconcile until nothing is unknown or reserved.
	await pg.sql(
		`CREATE OR REPLACE FUNCTION ${SCHEMA}.ledger_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() + make_interval(secs => ${LEASE + SETTLE + RECONCILE_CLAIM + 1}) $$`,
	);
	await waitFor(
		async () => {
			const [left] = await pg.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}.operations WHERE status IN ('unknown', 'reserved')`);
			if (left.n === 0) return true;
			await reconcileStep(0);
			return false;
		},
		{ what: 'every unknown or reserved operation reconciled', timeoutMs: 30_000, intervalMs: 50 },
	);

	// ---- invariants ----
	const problems: string[] = [];
	// One proceed per key and attempt: as workers saw it, and in the event log.
	for (const [k, n] of proceeds) if (n > 1) problems.push(`${k} proceeded ${n} times`);
	const dupEvents = await pg.sql(`SELECT operation_key, attempt, count(*)::int AS n FROM ${SCHEMA}.operation_events WHERE event = 'reserved' GROUP BY 1, 2 HAVING count(*) > 1`);
	if (dupEvents.length) problems.push(`duplicate reserved events: ${JSON.stringify(dupEvents.slice(0, 5))}`);
	// Never two writes at the provider for one operation.
	const writesPerOp = new Map<string, number>();
	for (const w of provider.byIdem.values()) writesPerOp.set(w.opKey, (writesPerOp.get(w.opKey) ?? 0) + 1);
	for (const [k, n] of writesPerOp) if (n > 1) problems.push(`duplicate side effect: ${k} written ${n} times`);
	// Truthful states.
	const ops = await pg.sql<{ operation_key: string; status: string; external_ref: string | null; idempotency_key: string }>(
		`SELECT operation_key, status, external_ref, idempotency_key FROM ${SCHEMA}.operations`,
	);
	const writeOf = new Map([...provider.byIdem.values()].map((w) => [w.opKey, w.ref]));
	for (const o of ops) {
		const ref = writeOf.get(o.operation_key);
		if (o.status === 'succeeded' && o.external_ref !== ref) problems.push(`${o.operation_key} succeeded with ${o.external_ref}, provider has ${ref}`);
		if (o.status !== 'succeeded' && ref) problems.push(`${o.operation_key} is ${o.status} but the provider has its write ${ref}`);
		if (!['succeeded', 'failed'].includes(o.status)) problems.push(`${o.operation_key} left ${o.status} after the drain`);
	}
	for (const k of writeOf.keys()) if (!ops.some((o) => o.operation_key === k)) problems.push(`provider write for ${k} has no operation`);
	// No task held twice.
	const seenClaim = new Set<string>();
	const byTask = new Map<string, ClaimRec[]>();
	for (const c of claims) {
		const id = `${c.taskId}#${c.attempt}`;
		if (seenClaim.has(id)) problems.push(`task ${c.taskId} attempt ${c.attempt} claimed twice`);
		seenClaim.add(id);
		byTask.set(c.taskId, [...(byTask.get(c.taskId) ?? []), c]);
	}
	for (const [id, list] of byTask) {
		list.sort((a, b) => a.claimAt - b.claimAt);
		for (let k = 1; k < list.length; k++) {
			const prev = list[k - 1];
			const freedAt = Math.min(prev.leaseEnd, prev.settledAt ?? Number.POSITIVE_INFINITY);
			// 50 ms: leaseExpiresAt is read on the database clock, settledAt on ours.
			if (list[k].claimAt + 50 < freedAt && prev.settledAt === undefined) problems.push(`task ${id} claimed again while its lease was live`);
		}
	}
	if (stats.DOUBLE_COMPLETE) problems.push(`${stats.DOUBLE_COMPLETE} double completions`);
	// No task lost.
	const tasks = await pg.sql<{ id: string; status: string }>(
		`SELECT id::text, status FROM ${SCHEMA}.queue_tasks UNION ALL SELECT id::text, status FROM ${SCHEMA}.queue_tasks_archive`,
	);
	const status = new Map(tasks.map((t) => [t.id, t.status]));
	for (const id of enqueued) {
		const s = status.get(id);
		if (!s || !['pending', 'processing', 'dead', 'succeeded'].includes(s)) problems.push(`task ${id} lost (${s})`);
	}
	for (const id of completed) if (status.get(id) !== 'succeeded') problems.push(`task ${id} completed but is ${status.get(id)}`);

	const summary = {
		seconds: SECONDS,
		...stats,
		operations: ops.length,
		succeeded: ops.filter((o) => o.status === 'succeeded').length,
		providerWrites: provider.byIdem.size,
		tasksEnqueued: enqueued.size,
		tasksCompleted: completed.size,
		claims: claims.length,
		problems: problems.length,
	};
	console.log(`soak summary: ${JSON.stringify(summary)}`);
	expect(problems).toEqual([]);
	// The soak did real work and really was disturbed.
	expect(stats.db_restarts).toBe(1);
	expect(stats.proceed).toBeGreaterThan(50);
	expect(enqueued.size).toBeGreaterThan(50);
	expect(completed.size).toBeGreaterThan(20);
	expect(provider.byIdem.size).toBeGreaterThan(20);
});
