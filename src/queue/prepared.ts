/**
 * Validation once, in the core. Every queue operation has a prepare function here in src/queue
 * (prepareEnqueueInput, prepareCompleteInput, prepareDequeueOptions, ...): the one place its rules
 * live. It checks a raw input (throws InputError, src/errors.ts, with a message meant for the user)
 * and returns it normalised and marked as prepared. The operation itself (enqueue, complete,
 * dequeue, ...) prepares whatever it is given that is not marked, so a caller may pass raw inputs
 * (checked then, all before anything is sent) or prepared ones (not checked again). The nodes
 * prepare item by item, so a bad item becomes that item's error and the others go on.
 */

const PREPARED = new WeakSet<object>();

/** Marks a value a prepare function returned (a fresh object: never the caller's own input). */
export function markPrepared<T extends object>(value: T): T {
	PREPARED.add(value);
	return value;
}

/** `value` itself when a prepare function made it, else `prepare(value)`. */
export function prepareOnce<Raw extends object, Out extends object>(value: Raw | Out, prepare: (raw: Raw) => Out): Out {
	return PREPARED.has(value) ? (value as Out) : prepare(value as Raw);
}
