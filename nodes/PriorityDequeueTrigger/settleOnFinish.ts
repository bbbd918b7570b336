/**
 * Claim mode, "Settle Tasks: When the Execution Finishes": what the trigger does with the tasks it
 * claimed for an execution once n8n reports that execution's run. Only a run that says it
 * succeeded completes them; a run that says it failed fails them (the queue's retry, backoff and
 * dead-letter rules apply); anything else leaves them to their lease.
 */
import type { IRun } from 'n8n-workflow';
import type { Bounds } from '../../src/db/bounds';
import { complete, completeAndDequeue, dequeue, fail, type ClaimedTask, type CompleteResult, type DequeueOptions, type LedgerSchema, type Queryable } from '../../src/queue';

export type SettleDecision = { action: 'complete' } | { action: 'fail'; error: string } | { action: 'none'; why: string };

/**
 * Complete only on status 'success' with `finished` true and no error in the run; fail on 'error',
 * 'crashed', 'canceled' or an error in the run's result; nothing for no run, 'waiting', 'running',
 * 'new', 'unknown' or a status this code does not know.
 */
export function settleDecision(run: IRun | undefined): SettleDecision {
	if (!run) return { action: 'none', why: 'n8n reported no run object for the execution' };
	const error = run.data?.resultData?.error;
	const status = run.status as string | undefined;
	if (status === 'error' || status === 'crashed' || status === 'canceled' || error) {
		const message = typeof error?.message === 'string' && error.message !== '' ? error.message : `the execution ended with status ${status ?? 'unknown'}`;
		return { action: 'fail', error: message };
	}
	if (status === 'success' && run.finished === true) return { action: 'complete' };
	if (status === 'success') return { action: 'none', why: 'the run says success but not finished' };
	return { action: 'none', why: `the execution's status is ${status === undefined ? 'not given' : JSON.stringify(status)}` };
}

type Log = (level: 'debug' | 'info' | 'warn', message: string) => void;

/**
 * Settles `tasks` (the ones this trigger claimed for the execution, with their lease tokens) by
 * the run's decision in one batch call, bounded by `bounds` (the credential's statement and lock
 * timeouts, as the claim). Never throws: a failed call is logged as a warning and the tasks are
 * left to their lease.
 */
export async function settleClaimed(db: Queryable, schema: LedgerSchema, bounds: Bounds, tasks: ClaimedTask[], run: IRun | undefined, log: Log): Promise<SettleDecision> {
	const decision = settleDecision(run);
	const ids = tasks.length === 1 ? `task ${tasks[0].taskId}` : `${tasks.length} tasks`;
	if (tasks.length === 0) return decision;
	const targets = tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken }));
	try {
		if (decision.action === 'none') {
			log('info', `Priority Dequeue Trigger: ${decision.why}; ${ids} left as claimed (their lease decides: at its expiry they are claimable again)`);
			return decision;
		}
		const results =
			decision.action === 'complete'
				? await complete(db, schema, targets, bounds)
				: await fail(db, schema, targets.map((t) => ({ ...t, error: decision.error })), {}, bounds);
		logOutcomes(results, decision.action, ids, log);
	} catch (e) {
		log('warn', `Priority Dequeue Trigger: settling ${ids} after the execution finished failed (${(e as Error)?.message ?? String(e)}); their lease decides`);
	}
	return decision;
}

/** Logs a settle's outcomes: debug when all went as expected, a warning when a lease was lost. */
function logOutcomes(results: Array<Pick<CompleteResult, 'outcome'>>, action: 'complete' | 'fail', ids: string, log: Log): void {
	const counts = new Map<string, number>();
	for (const r of results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
	const summary = [...counts].map(([o, n]) => `${n} ${o}`).join(', ');
	const lost = (counts.get('lease_lost') ?? 0) + (counts.get('not_found') ?? 0);
	const verb = action === 'complete' ? 'completing' : 'failing';
	if (lost > 0) log('warn', `Priority Dequeue Trigger: ${verb} ${ids} after the execution finished: ${summary} (a lost lease: the task may run again)`);
	else log('debug', `Priority Dequeue Trigger: ${verb} ${ids} after the execution finished: ${summary}`);
}

/** A finished execution's claimed tasks and the run n8n handed back, kept by the watcher for the next claim. */
export interface CarriedSettle {
	tasks: ClaimedTask[];
	run: IRun | undefined;
}

/** The watcher's settles (src/queue/watcher.ts hands them over untyped) as CarriedSettle values. */
function carried(settles: readonly unknown[] | undefined): CarriedSettle[] {
	return (settles ?? []).filter((x): x is CarriedSettle => Array.isArray((x as CarriedSettle | undefined)?.tasks));
}

/**
 * Settles `settles` (finished executions' tasks) with no claim after them: each as settleClaimed
 * does, one call per execution. Never throws.
 */
export async function settleCarried(db: Queryable, schema: LedgerSchema, bounds: Bounds, settles: readonly unknown[], log: Log): Promise<void> {
	for (const c of carried(settles)) await settleClaimed(db, schema, bounds, c.tasks, c.run, log);
}

/**
 * The claim of the trigger's next execution, with the finished executions' settles: the tasks of
 * runs that succeeded are completed in the claim's own transaction (completeAndDequeue: one round
 * trip, one commit); runs that failed, or that decide nothing, are settled (or logged) first as
 * settleClaimed does. Returns the claimed tasks. When the claim fails, the completions are sent
 * alone (settleClaimed: logged, never thrown) and the claim's error is thrown, so a settle is never
 * lost because the claim failed.
 */
export async function claimWithSettles(
	db: Queryable,
	schema: LedgerSchema,
	bounds: Bounds,
	claim: DequeueOptions,
	settles: readonly unknown[] | undefined,
	log: Log,
): Promise<ClaimedTask[]> {
	const toComplete: CarriedSettle[] = [];
	for (const c of carried(settles)) {
		if (c.tasks.length > 0 && settleDecision(c.run).action === 'complete') toComplete.push(c);
		else await settleClaimed(db, schema, bounds, c.tasks, c.run, log);
	}
	if (toComplete.length === 0) return dequeue(db, schema, claim, bounds);
	const tasks = toComplete.flatMap((c) => c.tasks);
	const ids = tasks.length === 1 ? `task ${tasks[0].taskId}` : `${tasks.length} tasks`;
	let r: Awaited<ReturnType<typeof completeAndDequeue>> | undefined;
	try {
		r = await completeAndDequeue(db, schema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })), claim, bounds);
	} finally {
		// It threw (the connection was lost): the completions may or may not be recorded; sending
		// them again alone is safe (already_settled). The claim's error goes on to the watcher.
		if (r === undefined) for (const c of toComplete) await settleClaimed(db, schema, bounds, c.tasks, c.run, log);
	}
	if (r.completeError) log('warn', `Priority Dequeue Trigger: settling ${ids} after the execution finished failed (${r.completeError.message}); their lease decides`);
	else logOutcomes(r.completed, 'complete', ids, log);
	if (r.claimError) throw r.claimError;
	return r.tasks;
}
