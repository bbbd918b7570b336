/**
 * Commits that wait for a synchronous standby, bounded.
 *
 * With synchronous replication (synchronous_standby_names set, synchronous_commit on, remote_write
 * or remote_apply), Postgres writes a transaction's commit record locally and then waits until the
 * standby confirms it, before answering the COMMIT. While it waits, other sessions do not see the
 * transaction yet and its row locks are held. When no synchronous standby is connected (it is down,
 * or a promoted standby inherited synchronous_standby_names = '*' and has no standby of its own),
 * that wait never ends by itself.
 *
 * statement_timeout does not end it: PostgreSQL 15 stops the statement timer before it commits
 * (checked here: `BEGIN; SET LOCAL statement_timeout = 1000; INSERT …; COMMIT` and an autocommit
 * INSERT under `SET statement_timeout = 1000` both waited 7 s to 11 min, until cancelled by hand;
 * test/integration/hardening/replication-check.test.ts repeats it). What ends it is a query cancel:
 * Postgres then answers the COMMIT as committed, with the WARNING "canceling wait for synchronous
 * replication due to user request" ("The transaction has already committed locally, but might not
 * have been replicated to the standby."). A terminate ends it with a similar WARNING and closes
 * the connection.
 *
 * So each bounded transaction (src/db/bounds.ts):
 * - listens for that WARNING on its connection, whoever cancelled the wait (an operator, a
 *   failover tool, the client below);
 * - arms a timer on the round trip that carries its COMMIT: when it is still unanswered after
 *   Statement Timeout + DEFAULTS.syncRepCancelMarginMs, the client sends the server a cancel request
 *   for that backend (the protocol's CancelRequest, a new TCP connection to the same host and port,
 *   without TLS as libpq before version 17 sends it), and destroys the connection once the round
 *   trip ends (a late cancel must never hit the next caller's statement);
 * - when the COMMIT was answered with that WARNING, or answered with any WARNING after the client
 *   cancelled it (the WARNING's text depends on the server's lc_messages), raises
 *   ReplicationUnconfirmedError: the batch IS recorded on this server, and may be lost if the
 *   database fails over to a standby before it has the batch.
 *
 * A server that does not answer at all (frozen, or the network drops packets) does not answer the
 * cancel either: the client's own round-trip deadline (src/db/deadline.ts, Statement Timeout +
 * DEFAULTS.deadlineMarginMs, later than this cancel) destroys the connection then, and the call
 * reports OutcomeUnknownError (may have been recorded).
 *
 * Sources: PostgreSQL documentation, "Synchronous Replication" (26.2.8.: "If the primary restarts
 * while commits are waiting for acknowledgment, those waiting transactions will be marked fully
 * committed once the primary database recovers"; a cancelled wait commits locally),
 * "Canceling Requests in Progress" (55.2.7: the CancelRequest message), src/backend/replication/syncrep.c.
 */
import { connect, type Socket } from 'node:net';
import { CoreError, everyItemSafe } from '../errors';

/** English text of the WARNING Postgres sends when a sync-rep wait is cancelled or terminated. */
const SYNC_REP_WARNING = /wait for synchronous replication/i;

/** What happened to one transaction's wait for its synchronous standby. */
export interface SyncRepWatch {
	/** The server said it stopped waiting for the synchronous standby (its WARNING). */
	readonly warned: boolean;
	/** Any WARNING arrived while the COMMIT's round trip was open (after a cancel, the sync-rep one). */
	readonly warnedDuringCommit: boolean;
	/** The client sent a cancel request because the COMMIT's round trip ran past its bound. */
	readonly cancelSent: boolean;
	/** Milliseconds the COMMIT's round trip had run when the cancel was sent. */
	readonly cancelAfterMs: number | null;
	/** Whether the COMMIT was answered without confirmation from the standby. */
	unconfirmed(): boolean;
	/** The round trip that carries the COMMIT starts now: the cancel is sent if it still runs after the bound. */
	arm(): void;
	/** That round trip ended (idempotent). */
	disarm(): void;
	/** Stops listening (call once the transaction is over). */
	stop(): void;
}

interface NoticeLike {
	severity?: string;
	code?: string;
	message?: string;
}

/** The parts of a pg Client a watch needs (pg sets these on every connected client). */
export interface CancelTarget {
	on(event: 'notice', listener: (n: NoticeLike) => void): unknown;
	removeListener(event: 'notice', listener: (n: NoticeLike) => void): unknown;
	processID?: number | null;
	secretKey?: number | null;
	host?: string;
	port?: number;
}

/**
 * Sends the protocol's CancelRequest for `target`'s backend on a new connection to its host and
 * port (best effort: resolves true when it was written, false when it could not be; never throws).
 * `timeoutMs` bounds the whole attempt.
 */
export function sendCancelRequest(target: CancelTarget, timeoutMs: number): Promise<boolean> {
	const pid = target.processID;
	const key = target.secretKey;
	if (typeof pid !== 'number' || typeof key !== 'number' || !target.host || !target.port) return Promise.resolve(false);
	return new Promise((resolve) => {
		let done = false;
		const host = target.host as string;
		const socket: Socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${target.port}`) : connect({ host, port: target.port as number });
		const finish = (ok: boolean) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			socket.destroy();
			resolve(ok);
		};
		const timer = setTimeout(() => finish(false), timeoutMs);
		timer.unref?.();
		socket.on('error', () => finish(false));
		socket.on('connect', () => {
			const msg = Buffer.alloc(16);
			msg.writeInt32BE(16, 0);
			msg.writeInt32BE(80877102, 4); // the cancel request code: 1234 in the high 16 bits, 5678 in the low
			msg.writeInt32BE(pid, 8);
			msg.writeInt32BE(key, 12);
			// The server closes the connection after reading it; nothing comes back.
			socket.end(msg, () => finish(true));
		});
	});
}

/**
 * Watches one transaction on `client` (see the file's header). `boundMs`: how long the COMMIT's
 * round trip may run before the cancel request is sent; `cancelTimeoutMs` bounds sending it.
 */
export function watchSyncRep(client: CancelTarget, boundMs: number, cancelTimeoutMs: number): SyncRepWatch {
	let warned = false;
	let warnedDuringCommit = false;
	let inCommit = false;
	let cancelSent = false;
	let cancelAfterMs: number | null = null;
	let timer: NodeJS.Timeout | undefined;
	const onNotice = (n: NoticeLike) => {
		// SQLSTATE class 01 is a warning in every language (the severity word is translated).
		const warning = String(n?.code ?? '').startsWith('01') || String(n?.severity ?? '').toUpperCase() === 'WARNING';
		if (warning && SYNC_REP_WARNING.test(String(n?.message ?? ''))) warned = true;
		// The WARNING's text is translated by the server's lc_messages; after our own cancel, any
		// WARNING on the COMMIT is the sync-rep one (COMMIT sends no other).
		if (warning && inCommit) warnedDuringCommit = true;
	};
	client.on('notice', onNotice);
	return {
		get warned() {
			return warned;
		},
		get warnedDuringCommit() {
			return warnedDuringCommit;
		},
		get cancelSent() {
			return cancelSent;
		},
		get cancelAfterMs() {
			return cancelAfterMs;
		},
		unconfirmed() {
			return warned || (cancelSent && warnedDuringCommit);
		},
		arm() {
			if (timer) clearTimeout(timer);
			inCommit = true;
			const started = Date.now();
			timer = setTimeout(() => {
				cancelSent = true;
				cancelAfterMs = Date.now() - started;
				void sendCancelRequest(client, cancelTimeoutMs);
			}, boundMs);
			timer.unref?.();
		},
		disarm() {
			if (timer) clearTimeout(timer);
			timer = undefined;
			inCommit = false;
		},
		stop() {
			if (timer) clearTimeout(timer);
			timer = undefined;
			client.removeListener('notice', onNotice);
		},
	};
}

/**
 * The batch was committed on the database server, but its synchronous standby did not confirm it:
 * the wait for synchronous replication was cancelled (by the client after `boundMs`, or by someone
 * else). The batch IS recorded on this server (every later statement here sees it); it may be lost
 * if the database fails over to a standby that does not have it. No item of it is a go-ahead.
 * `retryableItem(position)`: whether sending item `position` (0-based, in the order the core got the
 * items) again cannot record it twice (a Reserve of the same key meets its own reservation and
 * answers In Progress; a Confirm answers Repeated; an Enqueue without a dedupe key is recorded
 * again): the caller's CallOptions.repeatSafe (src/db/bounds.ts); default not safe. `retryable`:
 * true when that holds for every item.
 */
export class ReplicationUnconfirmedError extends CoreError {
	readonly code = 'SYNC_REP_UNCONFIRMED';
	readonly retryable: boolean;
	constructor(
		/** Milliseconds after which the client cancelled the wait; null when someone else did. */
		public readonly cancelledAfterMs: number | null,
		/** The connection ended after the WARNING (a terminate): committed here all the same. */
		public readonly connectionEnded = false,
		private readonly repeatSafe: boolean | readonly boolean[] = false,
	) {
		super(
			`the batch was recorded on the database server, but waiting for synchronous replication was cancelled ` +
				(cancelledAfterMs !== null
					? `by the node after ${cancelledAfterMs} ms (Statement Timeout + 1 s; no synchronous standby confirmed the commit)`
					: 'by the server (an operator, a failover tool, or a terminated connection)') +
				', so the standby may not have it: it may be lost if the database fails over now',
		);
		this.name = 'ReplicationUnconfirmedError';
		this.retryable = everyItemSafe(repeatSafe);
	}

	/** Whether sending item `position` again cannot record it twice. */
	retryableItem(position: number): boolean {
		return typeof this.repeatSafe === 'boolean' ? this.repeatSafe : this.repeatSafe[position] === true;
	}
}
