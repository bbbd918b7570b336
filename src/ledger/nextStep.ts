/**
 * What to do next, in one sentence per answer: the `ledger.nextStep` text the nodes put on every
 * item that did not get a go-ahead, so the item itself says which tool settles it. The steps are
 * the ones that work after a crash or a failed write (docs/recovery.md, "After a crash or a failed write"):
 * n8n's own Retry re-runs nodes from stored outputs and never asks the ledger again, so it is
 * never the step for an operation whose outcome is unknown.
 */
import type { OperationStatus, ReserveDecision } from './states';

/** The reconcile workflow's steps, named once. */
export const RECONCILE_STEPS =
	'run the reconcile workflow (Reconcile Unknown: Claim, look the write up at the target by ledger.idempotencyKey, Resolve; ' +
	'workflows/reconcile-payments.json). It claims the operation once its settle window has passed. Then send the same request again: ' +
	'the ledger answers Done Before if the write happened, or lets it proceed as the next attempt if it did not';

/** For an operation in human review (status review). */
export const REVIEW_STEPS =
	'a person checks the target (ledger.reason says why it is in review, e.g. a possible duplicate) and decides with Operation Ledger Admin: ' +
	'List (Needs Review or Possible Duplicates), then Settle by Hand (workflows/ledger-review.json). Do not send it again meanwhile';

/**
 * The next step for a Reserve decision (also the not-sent answers of Guarded HTTP Request), or
 * null for Proceed. `status` is the operation's status; `leaseExpiresAt` the live lease's end
 * (In Progress).
 */
export function reserveNextStep(outcome: ReserveDecision, status: OperationStatus | null, leaseExpiresAt: string | null): string | null {
	switch (outcome) {
		case 'proceed':
			return null;
		case 'already_succeeded':
			return 'Done before: answer from ledger.response and ledger.externalRef. Nothing was sent and nothing needs sending.';
		case 'in_progress':
			return (
				`Another execution (or an earlier try of this one) holds the lease${leaseExpiresAt ? ` until ${leaseExpiresAt}` : ''}; nothing was sent. ` +
				'If that execution is still running, its result will be recorded. If it crashed, n8n\'s Retry cannot settle it: wait until the lease ' +
				'has ended and send the same request again (it then answers Reconcile), then ' +
				RECONCILE_STEPS +
				'.'
			);
		case 'needs_reconcile':
			return status === 'review'
				? `In human review; nothing was sent: ${REVIEW_STEPS}.`
				: `The outcome of an earlier attempt is unknown (a timeout, a 5xx, a crash, or a lease that ended unconfirmed); nothing was sent. Do not send it again and do not use n8n's Retry for it: ${RECONCILE_STEPS}.`;
		case 'conflict':
			return 'The operation key was already used with a different request; nothing was sent. Fix the key or the request (a new request needs a new key).';
		case 'failed_permanently':
			return 'An earlier attempt was refused for good (ledger.reason); nothing was sent. Fix the cause, then use a new key version for a new attempt.';
	}
}

/**
 * The next step after a recorded outcome (Confirm Operation, and what Guarded HTTP Request sent):
 * `status` is what the ledger holds now; `retryable` for a failure; `stale` for a report the lease
 * no longer allowed (nothing of it recorded but an event).
 */
export function recordedNextStep(status: OperationStatus | null, retryable: boolean | null, stale: boolean): string | null {
	if (stale) {
		return `This report was not this item's to record (the lease had passed on, or the operation was settled meanwhile); it is in the event log. If it reports a success the ledger does not hold, the write may have happened twice: ${REVIEW_STEPS}.`;
	}
	switch (status) {
		case 'succeeded':
			return null;
		case 'failed':
			return retryable
				? 'Refused before it took effect, and the same request can succeed later (e.g. after a pause or a credential fix): send it again later; the ledger lets it proceed as the next attempt.'
				: 'Refused for good: fix the cause; a new attempt needs a new key version.';
		case 'unknown':
			return `The outcome is unknown (it may have taken effect). Do not send it again and do not use n8n's Retry for it: ${RECONCILE_STEPS}.`;
		case 'review':
			return `The write may have taken effect more than once (it ran again in another execution than the one its lease was granted to, e.g. n8n's Retry from the failed node): ${REVIEW_STEPS}.`;
		default:
			return null;
	}
}
