/**
 * The one place where an error of the driver (pg's DatabaseError with its SQLSTATE, a socket or TLS
 * error of Node, pg's own messages) is read and mapped to the core's error model (src/errors.ts):
 * toCoreError(). Everything else checks `instanceof` and reads `retryable`.
 *
 * Retryable (the same item may succeed later unchanged; nothing was recorded):
 * - the connection failed or was lost before the COMMIT was sent (`connectionFailed`): SQLSTATE
 *   class 08, 57P0x, class 28 and 3D000 (as reached while connecting), Node's ECONN*, EPIPE,
 *   ETIMEDOUT, ENOTFOUND, EAI_AGAIN, EHOSTUNREACH, ENETUNREACH, TLS handshake codes, and pg's
 *   messages for the same (Connection terminated, timeout exceeded when trying to connect, the
 *   database system is starting up, ...);
 * - a refusal that passes by itself: a bound that fired (57014 statement timeout, 55P03 lock not
 *   available), a serialization failure or deadlock that outlived the retries (40001, 40P01), too
 *   many connections or out of resources (53xxx), a server shutting down or restarting (57P01 to
 *   57P03), a read-only database (25006: a standby, e.g. the old primary after a failover, which the
 *   connection still reaches; writes succeed again once it reaches the primary).
 * Every other SQLSTATE (permission, syntax, constraint) needs a change first: not retryable.
 *
 * Sources: PostgreSQL documentation, Appendix A, "PostgreSQL Error Codes"; Node.js "Errors"
 * (system error codes) and "TLS" (certificate error codes).
 */
import { CoreError } from '../errors';

/** TLS handshake failures (Node's certificate error codes). */
export const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|CERT_|ERR_TLS_CERT_ALTNAME_INVALID)/;

const CONNECTION_CODES = /^(08|57P0|28|3D000|ECONN|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)/;
const CONNECTION_TLS_MESSAGES = /does not support SSL|self[- ]signed certificate|unable to verify|certificate/i;
const CONNECTION_MESSAGES =
	/Connection terminated|connection refused|ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|timeout exceeded when trying to connect|terminating connection|the database system is (starting up|shutting down|in recovery mode)/i;
const TRANSIENT_CODES = /^(57014|55P03|40001|40P01|53...|57P0[1-3]|25006)$/;

/**
 * A failure the driver reported (pg, the socket, TLS), in the core's model. `message` is the
 * driver's message as it is (it may carry credentials: scrub before showing it), `code` its
 * SQLSTATE or Node error code, `cause` the original error.
 */
export class DriverError extends CoreError {
	readonly code: string | undefined;
	/** The connection could not be made or was lost (nothing of the statement was recorded). */
	readonly connectionFailed: boolean;
	readonly retryable: boolean;
	constructor(readonly cause: unknown) {
		const err = (cause ?? {}) as { code?: unknown; message?: unknown };
		super(String(err.message ?? cause));
		this.name = 'DriverError';
		this.code = typeof err.code === 'string' ? err.code : undefined;
		const message = typeof err.message === 'string' ? err.message : '';
		this.connectionFailed =
			(this.code !== undefined && (CONNECTION_CODES.test(this.code) || TLS_CODES.test(this.code))) || CONNECTION_TLS_MESSAGES.test(message) || CONNECTION_MESSAGES.test(message);
		this.retryable = this.connectionFailed || (this.code !== undefined && TRANSIENT_CODES.test(this.code));
	}
}

/**
 * `e` in the core's error model: a CoreError as it is, anything else (an error of pg or the
 * socket, or a value that is not an Error) as a DriverError classified above.
 */
export function toCoreError(e: unknown): CoreError {
	return e instanceof CoreError ? e : new DriverError(e);
}

/**
 * A core error that wraps the failure that caused it (`cause`, e.g. RetentionError around a
 * batch's error): retryable exactly when its cause is.
 */
export abstract class WrappingError extends CoreError {
	get retryable(): boolean {
		return toCoreError(this.cause).retryable;
	}
}
