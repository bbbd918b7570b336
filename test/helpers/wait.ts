/**
 * The one bounded wait of the tests: poll a condition until it holds, and fail when it does not in
 * time. Waiting on a state (a notification arrived, a row changed, an execution finished) instead
 * of a fixed sleep.
 */

export interface WaitOptions {
	/** What is waited for, as the error should say it ("the marker notification on q_1"). */
	what: string;
	/** Give up after this many milliseconds (default 5000). */
	timeoutMs?: number;
	/** Milliseconds between two polls (default 25). */
	intervalMs?: number;
}

/**
 * Calls `predicate` until it returns a truthy value, and returns that value; waits `intervalMs`
 * between calls. Throws `Error('timed out after <timeoutMs> ms waiting for <what>')` when the
 * deadline passes without one (a predicate that throws ends the wait with its error). The
 * predicate is called at least once, and once more after the deadline, so a slow poll is not cut short.
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, options: WaitOptions): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
	const timeoutMs = options.timeoutMs ?? 5000;
	const intervalMs = options.intervalMs ?? 25;
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const past = Date.now() > deadline;
		const v = await predicate();
		if (v) return v as Exclude<T, false | null | undefined | 0 | ''>;
		if (past) throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what}`);
		await new Promise((r) => setTimeout(r, intervalMs));
	}
}
