/**
 * Checking a client out of a pool, the one way: while checked out, a killed backend emits 'error'
 * on the client (pg-pool listens only while it is idle), and without a listener that would end the
 * process; the query in flight rejects as well. `fn` may mark the client broken (a connection
 * error); a broken client is destroyed on release instead of going back to the pool.
 */
import type { PoolClient } from 'pg';

export async function checkedOut<T>(
	pool: { connect(): Promise<PoolClient> },
	fn: (client: PoolClient, markBroken: (e: Error) => void) => Promise<T>,
): Promise<T> {
	const client = await pool.connect();
	let broken: Error | undefined;
	const onError = (e: Error) => {
		broken = e;
	};
	client.on('error', onError);
	try {
		return await fn(client, (e) => {
			broken = e;
		});
	} finally {
		client.removeListener('error', onError);
		client.release(broken);
	}
}
