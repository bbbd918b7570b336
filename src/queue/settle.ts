/**
 * What every settle call (complete, fail, extend lease, release) takes and returns. Each call is
 * fenced by the lease token: it applies only while the caller's lease is live (status processing,
 * same token, lease_expires_at > now()); otherwise the row is untouched and the result says why.
 */
import type { SettleOutcome, TaskState } from './states';
import { checkLeaseToken, checkTaskId } from './types';

export interface SettleTarget {
	/** Task id as returned by dequeue. */
	taskId: string | number;
	/** Lease token as returned by dequeue. */
	leaseToken: string;
}

export interface SettleResult {
	/** Index of the input in the `items` array. */
	index: number;
	taskId: string;
	outcome: SettleOutcome;
	/** True for lease_lost and not_found: nothing changed. */
	leaseLost: boolean;
	/** The task's state after the call (null when not found). */
	status: TaskState | null;
	/** Why nothing changed (lease_lost, already_settled, not_found), or a note. */
	detail: string | null;
}

/**
 * The id and token of a settle input, checked and normalised (id as decimal text, token in lower
 * case); used by each settle operation's prepare function. Throws InputError.
 */
export function checkSettleTarget(t: SettleTarget): { taskId: string; leaseToken: string } {
	return { taskId: checkTaskId(t.taskId), leaseToken: checkLeaseToken(t.leaseToken) };
}

/** A prepared settle input's id and token as the settle functions read them. */
export function settleKey(t: SettleTarget): { id: string; tok: string } {
	return { id: String(t.taskId), tok: t.leaseToken };
}

/** The columns every settle function's row carries; each file adds its own. */
export interface SettleRow {
	idx: number;
	id: string;
	outcome: SettleOutcome;
	status: TaskState | null;
	detail: string | null;
}

export function baseResult(r: SettleRow): SettleResult {
	return {
		index: r.idx,
		taskId: String(r.id),
		outcome: r.outcome,
		leaseLost: r.outcome === 'lease_lost' || r.outcome === 'not_found',
		status: r.status,
		detail: r.detail,
	};
}

/** Puts rows (which carry `idx`) back in input order. */
export function inInputOrder<T extends { index: number }>(rows: T[], length: number): T[] {
	const out: T[] = new Array(length);
	for (const r of rows) out[r.index] = r;
	return out;
}
