/**
 * Settle by ID: an operator (or a workflow acting for one) completes, fails, retries or reschedules
 * a task of a queue by its id, without the lease, recorded with who did it and why (the peers'
 * completeJobs / permanentlyFailJobs / rescheduleJobs; docs/queue.md, "Settle by ID"). A task held
 * by a lease is acted on at once and the lease ends: its holder's next Complete, Fail, Release or
 * Extend Lease answers `lease_lost` and changes nothing. SQL: queue_settle_by_id.
 */
import type { OperatorAction, SettleByIdOutcome, TaskState } from './states';
import { OPERATOR_ACTIONS } from './states';
import { MAX_NOT_BEFORE_MS, MIN_NOT_BEFORE_MS, parseTimestamp } from './enqueue';
import { markPrepared, prepareOnce } from './prepared';
import { checkQueueName, checkTaskId, fn, idText, iso, type Queryable, type LedgerSchema } from './types';
import { boundedQuery, type Bounds } from '../db/bounds';
import { InputError } from '../errors';
import { assertJson, NotJsonError } from '../json/canonical';
import { TEXT_LIMITS } from '../limits';
import { cutAny, storableText } from '../text';

export interface SettleByIdInput {
	/** The queue the task belongs to (a task of another queue is not_found, as Cancel by id). */
	queue: string;
	/** The task: a positive bigint as text or a safe integer. */
	taskId: string | number;
	/** complete | fail | retry | reschedule (OPERATOR_ACTIONS, src/queue/states.ts). */
	action: OperatorAction;
	/** complete: the JSON result kept with the archived task (plain JSON, as Complete takes). */
	result?: unknown;
	/**
	 * retry, reschedule: when the task may run again, ISO-8601 text (no offset = UTC) or a Date,
	 * 0001-01-01 to 9999-12-31; empty or a past time = now (the queue's clock).
	 */
	runAt?: string | Date | null;
	/** Why (operator_reason; for fail and retry also last_error): made storable and cut to TEXT_LIMITS.maxSettleByIdReasonLength (2,000 UTF-16 units); null when empty. */
	reason?: string | null;
	/** Who (operator_by): cut to TEXT_LIMITS.maxSettleByIdByLength (60 units); null when empty. */
	settledBy?: string | null;
}

export interface SettleByIdResult {
	taskId: string | null;
	/**
	 * completed | dead | retry_scheduled | rescheduled (done) | finished (nothing changed: it already
	 * ended, or it is dead and the act is not complete) | cancel_requested (nothing changed: its
	 * holder was asked to stop) | not_found.
	 */
	outcome: SettleByIdOutcome;
	status: TaskState | null;
	/** When the task may run again (ISO-8601), for retry_scheduled and rescheduled. */
	runAt: string | null;
	/** True when a lease held the task and this call ended it (its holder's settle answers lease_lost). */
	leaseEnded: boolean;
	detail: string | null;
}

interface Row {
	idx: number;
	id: string | null;
	outcome: SettleByIdOutcome;
	status: TaskState | null;
	run_at: Date | null;
	lease_ended: boolean;
	detail: string | null;
}

/**
 * Checks one input: a queue name (checkQueueName), a task id (checkTaskId), an action of
 * OPERATOR_ACTIONS, a result that is plain JSON (complete only; ignored otherwise), a run-at time
 * (retry and reschedule only). Texts are cut, never refused. Returns it normalised and prepared
 * (prepared.ts). Throws InputError.
 */
export function prepareSettleByIdInput(it: SettleByIdInput): SettleByIdInput {
	const queue = checkQueueName(it.queue);
	const taskId = checkTaskId(it.taskId);
	if (!(OPERATOR_ACTIONS as readonly string[]).includes(it.action as string))
		throw new InputError(`Action must be one of ${OPERATOR_ACTIONS.join(', ')}, got ${cutAny(JSON.stringify(it.action) ?? String(it.action), 60)}`);
	const reason = storableText(String(it.reason ?? ''), TEXT_LIMITS.maxSettleByIdReasonLength).trim() || null;
	const settledBy = storableText(String(it.settledBy ?? ''), TEXT_LIMITS.maxSettleByIdByLength).trim() || null;
	const out: SettleByIdInput = { queue, taskId, action: it.action, reason, settledBy, runAt: null };
	if (it.action === 'complete' && it.result !== undefined) {
		try {
			assertJson(it.result);
		} catch (e) {
			if (e instanceof NotJsonError) throw new InputError(`The result is not plain JSON: ${e.message.replace(/^\$/, 'result')}`);
			throw e;
		}
		out.result = it.result;
	}
	if ((it.action === 'retry' || it.action === 'reschedule') && it.runAt !== undefined && it.runAt !== null && it.runAt !== '') {
		const t = it.runAt instanceof Date ? it.runAt : parseTimestamp(String(it.runAt));
		const shown = () => cutAny(it.runAt instanceof Date ? 'an invalid Date' : JSON.stringify(String(it.runAt)), 60);
		if (Number.isNaN(t.getTime())) throw new InputError(`Run at is not a valid date: ${shown()}`);
		if (t.getTime() < MIN_NOT_BEFORE_MS || t.getTime() > MAX_NOT_BEFORE_MS)
			throw new InputError(`Run at must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z, got ${it.runAt instanceof Date ? t.toISOString() : shown()}`);
		out.runAt = t.toISOString();
	}
	return markPrepared(out);
}

/**
 * Settles a batch by id in one statement (each item's task locked in turn, in id order; the batch's
 * lock waits share one budget). Results in input order. Throws InputError for a malformed item
 * (before any write); LedgerBusyError/timeouts as every bounded call (src/db/bounds.ts). After a
 * lost COMMIT a complete or fail is repeat-safe (sent again it is answered finished), a retry or
 * reschedule is not (it would act a second time: a task claimed in between would lose its lease),
 * so those items are `retryable: false`.
 */
export async function settleById(db: Queryable, schema: LedgerSchema, items: SettleByIdInput[], bounds?: Bounds): Promise<SettleByIdResult[]> {
	if (items.length === 0) return [];
	const payload = items
		.map((it) => prepareOnce(it, prepareSettleByIdInput))
		.map((it, i) => ({
			i,
			queue: it.queue,
			id: String(it.taskId),
			act: it.action,
			res: it.result === undefined ? null : it.result,
			at: it.runAt ?? null,
			reason: it.reason ?? null,
			by: it.settledBy ?? null,
		}));
	const rows = await boundedQuery<Row>(db, `SELECT * FROM ${fn(schema, 'queue_settle_by_id')}($1::jsonb)`, [JSON.stringify(payload)], bounds, {
		repeatSafe: payload.map((p) => p.act === 'complete' || p.act === 'fail'),
	});
	const out: SettleByIdResult[] = new Array(items.length);
	for (const r of rows)
		out[r.idx] = { taskId: idText(r.id), outcome: r.outcome, status: r.status, runAt: iso(r.run_at), leaseEnded: r.lease_ended, detail: r.detail };
	return out;
}
