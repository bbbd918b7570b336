/**
 * Claim mode, "Settle Tasks: When the Execution Finishes": what the trigger does with the tasks it
 * claimed for an execution once n8n reports that execution's run. Only a run that says it
 * succeeded completes them; a run that says it failed fails them (the queue's retry, backoff and
 * dead-letter rules apply); anything else leaves them to their lease.
 */
import type { IRun } from 'n8n-workflow';
import type { Bounds } from '../../src/db/bounds';
import { complete, fail, type ClaimedTask, type LedgerSchema, type Queryable } from '../../src/queue';

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
		const counts = new Map<string, number>();
		for (const r of results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
		const summary = [...counts].map(([o, n]) => `${n} ${o}`).join(', ');
		const lost = (counts.get('lease_lost') ?? 0) + (counts.get('not_found') ?? 0);
		const verb = decision.action === 'complete' ? 'completing' : 'failing';
		if (lost > 0) log('warn', `Priority Dequeue Trigger: ${verb} ${ids} after the execution finished: ${summary} (a lost lease: the task may run again)`);
		else log('debug', `Priority Dequeue Trigger: ${verb} ${ids} after the execution finished: ${summary}`);
	} catch (e) {
		log('warn', `Priority Dequeue Trigger: settling ${ids} after the execution finished failed (${(e as Error)?.message ?? String(e)}); their lease decides`);
	}
	return decision;
}
