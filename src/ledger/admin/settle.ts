/**
 * Operation Ledger Admin → Settle by Hand: a person's decision on an unknown or review operation,
 * applied in one round trip and one transaction by schema/functions/ledger/ops_settle_by_hand.sql
 * (docs/operations.md). A decision is reported as settled only when the database made it in this
 * call (result "settled"); it changes what later Reserves of the key answer.
 */
import { sqlFunction, type LedgerSchema } from '../../db/identifiers';
import { boundedQuery, type Bounds } from '../../db/bounds';
import type { Queryable } from '../../db/values';
import { InputError } from '../../errors';
import { cutAny } from '../../text';
import { resultsByItem } from '../rows';
import { TEXT_LIMITS } from '../../limits';
import { eventContextJson, type SettleByHandResult, type EventContext, type OperationStatus } from '../states';
import { checkOperationKey, checkOptionalText } from '../validate';

/** A person's verdict on an operation whose outcome is unknown. */
export const SETTLE_DECISIONS = ['happened', 'not_happened'] as const;
export type SettleDecision = (typeof SETTLE_DECISIONS)[number];

export interface SettleItem {
	index: number;
	operationKey: string;
	decision: SettleDecision;
	externalRef: string | null;
	reason: string;
	decidedBy: string;
	/**
	 * Decide "not_happened" before the operation's settle window ends (an override, recorded in the
	 * event as beforeSettleWindowEnd). Without it such a decision is refused (refused_early).
	 */
	beforeSettleWindowEnd: boolean;
}

/**
 * settled: this call decided. refused: already settled (decidedBy names by whom). refused_early:
 * "not_happened" while the operation's settle window runs (settleUntil says until when), without
 * the override; nothing changed.
 */
export type SettleResult = SettleByHandResult;

export interface SettleResultRow {
	index: number;
	result: SettleResult;
	status: OperationStatus | null;
	attempt: number | null;
	externalRef: string | null;
	retryable: boolean | null;
	/** The person (or "node X in execution Y") whose decision stands. */
	decidedBy: string | null;
	decidedAt: string | null;
	/** happened / not_happened for a person's decision, else the event that settled it. */
	decision: string | null;
	/** For refused_early: when the operation's settle window ends (ISO-8601, database clock). */
	settleUntil: string | null;
}

/**
 * Validates one decision. Throws InputError before anything is written: the key, who
 * decides (1..200 characters), a reason (1..2000), happened/not_happened, and for happened the
 * target's reference as evidence. `beforeSettleWindowEnd` (default false) must be a boolean.
 */
export function prepareSettleItem(
	index: number,
	input: { operationKey: unknown; decision: unknown; externalRef?: unknown; reason: unknown; decidedBy: unknown; beforeSettleWindowEnd?: unknown },
): SettleItem {
	const operationKey = checkOperationKey(input.operationKey);
	if (!SETTLE_DECISIONS.includes(input.decision as SettleDecision)) {
		throw new InputError(`The decision must be happened or not_happened; got ${cutAny(JSON.stringify(input.decision) ?? String(input.decision), 40)}`);
	}
	const decision = input.decision as SettleDecision;
	const decidedBy = checkOptionalText(typeof input.decidedBy === 'string' ? input.decidedBy.trim() : input.decidedBy, 'Decided by', 200);
	if (decidedBy === null) throw new InputError('"Decided By" is empty: a decision by hand must name the person who made it');
	const reason = checkOptionalText(typeof input.reason === 'string' ? input.reason.trim() : input.reason, 'The reason', 2000);
	if (reason === null) throw new InputError('The reason is empty: say why (e.g. "found payment pi_123 in the Stripe dashboard")');
	const externalRef = checkOptionalText(typeof input.externalRef === 'string' ? input.externalRef.trim() : input.externalRef, 'The external reference', TEXT_LIMITS.maxReferenceLength);
	if (decision === 'happened' && externalRef === null) {
		throw new InputError('"Happened" needs the target\'s reference for the write (e.g. the payment ID), as evidence');
	}
	const early = input.beforeSettleWindowEnd ?? false;
	if (typeof early !== 'boolean') throw new InputError(`"Decide Before the Settle Window Ends" must be true or false; got ${cutAny(JSON.stringify(early) ?? String(early), 40)}`);
	return { index, operationKey, decision, externalRef: decision === 'happened' ? externalRef : null, reason, decidedBy, beforeSettleWindowEnd: early };
}

/** Applies decisions in one round trip and one transaction; one result per item, in order. */
export async function settleByHand(
	db: Queryable,
	schema: LedgerSchema,
	items: SettleItem[],
	ctx: EventContext = {},
	bounds?: Bounds,
): Promise<SettleResultRow[]> {
	if (items.length === 0) return [];
	const doc = JSON.stringify(
		items.map((it) => ({ i: it.index, k: it.operationKey, d: it.decision, ref: it.externalRef, reason: it.reason, by: it.decidedBy, early: it.beforeSettleWindowEnd === true })),
	);
	const rows = await boundedQuery<{
		idx: number;
		result: SettleResult;
		status: OperationStatus | null;
		attempt: number | null;
		external_ref: string | null;
		retryable: boolean | null;
		decided_by: string | null;
		decided_at: Date | null;
		decision: string | null;
		settle_until: Date | null;
	}>(db, `SELECT * FROM ${sqlFunction(schema, 'ops_settle_by_hand')}($1::jsonb, $2::jsonb)`, [doc, eventContextJson(ctx)], bounds, {
		// A decision already recorded answers refused (naming who decided), never a second decision;
		// one refused early is refused early again (nothing changed).
		repeatSafe: true,
	});
	return resultsByItem('ops_settle_by_hand', items, rows, (r) => ({
		retryable: r.retryable,
		decidedBy: r.decided_by,
		decidedAt: r.decided_at ? new Date(r.decided_at).toISOString() : null,
		decision: r.decision,
		settleUntil: r.settle_until ? new Date(r.settle_until).toISOString() : null,
	}));
}

/** A sentence for a refused decision, naming who decided (or, refused_early, when the window ends). */
export function refusalMessage(r: SettleResultRow): string {
	if (r.result === 'refused_early') {
		return (
			`"Did Not Happen" is refused until the operation's settle window ends${r.settleUntil ? ` at ${r.settleUntil}` : ''}: the write may still be landing at the target, ` +
			'and a Reserve that proceeded now would send it again (Reconcile Unknown refuses the same decision). Decide again after that time, ' +
			'or switch on "Decide Before the Settle Window Ends" if you have evidence that it cannot land; nothing was changed'
		);
	}
	if (r.status === 'succeeded' || r.status === 'failed') {
		return `Already settled as ${r.status}${r.decision ? ` (${r.decision})` : ''} by ${r.decidedBy ?? 'a workflow'}${r.decidedAt ? ` at ${r.decidedAt}` : ''}; only unknown or review operations can be settled by hand`;
	}
	return `The operation is ${r.status ?? 'gone'}, not unknown or review; only those can be settled by hand`;
}
