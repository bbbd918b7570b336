/**
 * Checking a client out of a pool, the one way: while checked out, a killed backend emits 'error'
 * on the client (pg-pool listens only while it is idle), and without a listener that would end the
 * process; the query in flight rejects as well. `fn` may mark the client broken (a connection
 * error); a broken client is destroyed on release instead of going back to the pool.
 *
 * `fn` gets the client seen through a deadline (src/db/deadline.ts): every round trip it sends is
 * bounded by `deadlineMs`; when that passes, the connection is destroyed, the client is marked
 * broken (never returned to the pool) and the call rejects with DeadlineError. A client that still
 * has a query running when `fn` ends (e.g. `fn` gave up on it) is destroyed the same way.
 * `raw` is the pg client itself, for listeners and its backend's cancel key (src/db/syncRep.ts);
 * send no query through it (that would bypass the deadline).
 */
import type { PoolClient } from 'pg';
import { destroyConnection, withDeadline, type BoundedClient } from './deadline';

export async function checkedOut<T>(
	pool: { connect(): Promise<PoolClient> },
	deadlineMs: number,
	fn: (client: BoundedClient, markBroken: (e: Error) => void, raw: PoolClient) => Promise<T>,
): Promise<T> {
	const client = await pool.connect();
	let broken: Error | undefined;
	const onError = (e: Error) => {
		broken = e;
	};
	client.on('error', onError);
	const bounded = withDeadline(client, deadlineMs, (e) => {
		broken = e;
	});
	try {
		return await fn(
			bounded,
			(e) => {
				broken = e;
			},
			client,
		);
	} finally {
		client.removeListener('error', onError);
		// A client with a query still on the wire must never serve the next caller.
		const busy = (client as unknown as { _getActiveQuery?: () => unknown })._getActiveQuery?.();
		if (busy && !broken) {
			broken = new Error('A query was still running on this connection when it was released');
			destroyConnection(client);
		}
		client.release(broken);
	}
}
