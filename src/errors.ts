/**
 * The core's one error model, shared by the ledger and the queue. Every error the core raises
 * itself is a CoreError and says, where it is raised, whether the same item may succeed later as
 * it is (`retryable`): true when nothing was recorded and the cause passes by itself (a bound
 * fired, the connection was lost before the COMMIT, a lock stayed held), false when the input, the
 * credential or the schema must change first, or when the item may have been recorded and would be
 * recorded again. Errors of the driver (pg, the socket) are mapped to the model by one function,
 * toCoreError() in src/db/driverError.ts. Callers check the kind with `instanceof` and read
 * `retryable` (or `retryableItem(position)` for a batch whose items differ), never a name or a
 * message.
 */
export abstract class CoreError extends Error {
	/** True when sending the same item again later, unchanged, can succeed and cannot record it twice. */
	abstract readonly retryable: boolean;

	/**
	 * `retryable` for item `position` of the batch (0-based, in the order the core got the items).
	 * The same for every item unless the error knows better (OutcomeUnknownError,
	 * ReplicationUnconfirmedError: it depends on whether each item's repeat is answered from what was
	 * recorded).
	 */
	retryableItem(position: number): boolean {
		void position;
		return this.retryable;
	}
}

/**
 * Input a caller must fix, raised before anything is written (bad key, lease token, queue name,
 * seconds out of range...). Not retryable. Nodes recognise it with `instanceof InputError` and turn
 * it into an item-level error.
 */
export class InputError extends CoreError {
	readonly retryable = false;
	constructor(message: string) {
		super(message);
		this.name = 'InputError';
	}
}

/**
 * The `retryable` of a batch error whose items differ: true when `repeatSafe` (one flag for the
 * batch, or one per item, as in CallOptions.repeatSafe, src/db/bounds.ts) holds for every item.
 */
export function everyItemSafe(repeatSafe: boolean | readonly boolean[]): boolean {
	return typeof repeatSafe === 'boolean' ? repeatSafe : repeatSafe.length > 0 && repeatSafe.every((s) => s === true);
}
