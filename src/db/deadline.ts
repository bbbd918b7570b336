/**
 * The client's own bound on every round trip, for when the server cannot enforce its timeouts:
 * a frozen server (SIGSTOP, a hung host), a network that drops packets while both sockets stay
 * open (a partition, a dead NAT entry), a proxy that stops forwarding. statement_timeout and
 * lock_timeout run inside Postgres, so they cannot fire there; nothing else would end the wait.
 *
 * - Each round trip on a checked-out client gets a deadline (pg's `query_timeout`, milliseconds:
 *   src/db/bounds.ts roundTripDeadlineMs, Statement Timeout + DEFAULTS.deadlineMarginMs).
 * - pg's `query_timeout` only rejects the query: the client keeps the query as its active one and
 *   the socket open, so a pool would hand the same hung client to the next caller and every later
 *   query on it would queue behind the hung one (node-postgres 8.23.1, lib/client.js: the timer
 *   splices the query out of the queue only when it was not sent yet; brianc/node-postgres issue
 *   3399). So when the deadline passes, the connection is destroyed here (pg's own `end()`, which
 *   destroys the socket of a client with an active query) and the client is released as broken:
 *   pg-pool removes it and opens a new connection for the next caller.
 * - Postgres rolls back an open transaction of a connection that ends; a COMMIT already on its
 *   way may have been carried out or not (OutcomeUnknownError, src/db/bounds.ts).
 */
import type { PoolClient, QueryConfig } from 'pg';
import { CoreError } from '../errors';

/**
 * The client's deadline for one round trip passed; the connection was destroyed. Retryable: it is
 * raised only when nothing was recorded (the COMMIT was not on its way, or the call was read-only;
 * otherwise the call raises OutcomeUnknownError).
 */
export class DeadlineError extends CoreError {
	readonly retryable = true;
	constructor(
		/** The deadline that passed, milliseconds. */
		public readonly deadlineMs: number,
	) {
		super(
			`The database did not answer within ${deadlineMs} ms (the client's deadline for one round trip: the credential's Statement Timeout plus a margin), ` +
				'so the connection was closed: the server is frozen or the network drops packets',
		);
		this.name = 'DeadlineError';
	}
}

/** pg's rejection when `query_timeout` fires (node-postgres lib/client.js). */
const PG_READ_TIMEOUT = 'Query read timeout';

/** True for the error pg raises when a query's `query_timeout` passed. */
export function isReadTimeout(e: unknown): boolean {
	return (e as { message?: unknown })?.message === PG_READ_TIMEOUT;
}

type AnyClient = Pick<PoolClient, 'query' | 'end'>;

/**
 * Ends the connection of `client` at once: pg's end() destroys the socket of a client with an
 * active query (a hung one is still active); the socket is destroyed here as well in case the
 * answer arrived in the same tick and end() would otherwise wait for the server's goodbye.
 */
export function destroyConnection(client: AnyClient): void {
	void Promise.resolve()
		.then(() => client.end())
		.catch(() => undefined);
	(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** What a caller may override per statement (a longer deadline for schema migrations). */
export type DeadlineQueryConfig = QueryConfig & { query_timeout?: number };

/** A client seen through a deadline (withDeadline). */
export type BoundedClient = Pick<PoolClient, 'query'> & {
	/**
	 * CommandComplete messages received during the last query sent (one per finished statement of a
	 * multi-statement simple query: Postgres sends each before it starts the next statement).
	 */
	completedStatements(): number;
};

/**
 * `client` seen through a deadline: its `query` (text and values, or a config object) sends each
 * statement with `query_timeout` = `deadlineMs` (a config's own `query_timeout` wins); when that
 * passes, `onExpired` runs, the connection is destroyed and the call rejects with DeadlineError.
 * Promise forms only. It also counts the statements the server reported complete during each query
 * (completedStatements), from pg's protocol messages.
 */
export function withDeadline(client: AnyClient, deadlineMs: number, onExpired: (e: DeadlineError) => void): BoundedClient {
	const connection = (client as unknown as { connection?: { on(e: string, f: () => void): void; removeListener(e: string, f: () => void): void } }).connection;
	let completed = 0;
	const onComplete = () => {
		completed++;
	};
	const query = (textOrConfig: string | DeadlineQueryConfig, values?: unknown[]) => {
		const base: DeadlineQueryConfig = typeof textOrConfig === 'string' ? { text: textOrConfig } : { ...textOrConfig };
		if (values !== undefined) base.values = values;
		const limit = base.query_timeout ?? deadlineMs;
		completed = 0;
		connection?.on('commandComplete', onComplete);
		return (client.query({ ...base, query_timeout: limit } as QueryConfig) as Promise<unknown>)
			.catch((e: unknown) => {
				if (!isReadTimeout(e)) throw e;
				const err = new DeadlineError(limit);
				onExpired(err);
				destroyConnection(client);
				throw err;
			})
			.finally(() => connection?.removeListener('commandComplete', onComplete));
	};
	return { query, completedStatements: () => completed } as unknown as BoundedClient;
}
