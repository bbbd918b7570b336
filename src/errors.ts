/**
 * The one error type for input a caller must fix, used by the ledger and the queue alike.
 * Raised before anything is written (bad key, lease token, queue name, seconds out of range...).
 * Nodes recognise it with `instanceof InputError` and turn it into an item-level error; the old
 * names LedgerInputError (src/ledger/validate.ts) and QueueInputError (src/queue/types.ts) are
 * aliases of this class, kept so existing imports keep working.
 */
export class InputError extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'InputError';
	}
}
