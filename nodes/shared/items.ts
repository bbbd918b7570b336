/**
 * Item plumbing shared by the nodes: validate every item first (bad input writes nothing), then
 * one database round trip for the valid ones, then route results to outputs with pairedItem set.
 *
 * continueOnFail: a failed item is emitted as `{ json: { error: message }, pairedItem: { item: i } }`
 * on the node's Unrecorded output (output 0; see outputs.ts), never on a
 * go-ahead output; with "On Error: Continue (using error output)" n8n moves exactly those items to
 * the error output. Without continueOnFail, the first bad item throws a NodeOperationError carrying
 * its itemIndex, before anything is written.
 */
import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import { cutText } from '../../src/text';
import { InputError, type CoreError } from '../../src/errors';
import { InvalidSchemaNameError } from '../../src/db/identifiers';
import { PackageFileMissingError, SchemaNotReadyError } from '../../src/db/migrate';
import { DeadlineError, OutcomeUnknownError } from '../../src/db/bounds';
import { ReplicationUnconfirmedError } from '../../src/db/syncRep';
import { DriverError, TLS_CODES, toCoreError } from '../../src/db/driverError';
import { getLedgerConnection, type LedgerConnection } from './connection';
import { isCredentialLoadError } from './credential';

/** An input item that passed validation, with the values prepared for the database. */
export interface Prepared<T> {
	index: number;
	value: T;
}

/**
 * Raised by prepare functions for input the user must fix; message is shown on the item. An
 * InputError (src/errors.ts) with an optional description for the n8n error panel.
 */
export class ItemInputError extends InputError {
	constructor(
		message: string,
		public readonly description?: string,
	) {
		super(message);
		this.name = 'ItemInputError';
	}
}

/**
 * Runs `prepare` for every input item. Returns the valid ones and, when continueOnFail is on, the
 * error items to emit; otherwise throws for the first invalid item.
 */
export function prepareItems<T>(
	fns: IExecuteFunctions,
	items: INodeExecutionData[],
	prepare: (index: number, item: INodeExecutionData) => T,
): { prepared: Array<Prepared<T>>; errorItems: INodeExecutionData[] } {
	const prepared: Array<Prepared<T>> = [];
	const errorItems: INodeExecutionData[] = [];
	for (let i = 0; i < items.length; i++) {
		try {
			prepared.push({ index: i, value: prepare(i, items[i]) });
		} catch (e) {
			const err = e as Error;
			if (fns.continueOnFail()) {
				errorItems.push(errorItem(fns, err.message, i));
				continue;
			}
			if (err instanceof NodeOperationError) throw err;
			throw new NodeOperationError(fns.getNode(), err.message, {
				itemIndex: i,
				description: (err as ItemInputError).description,
			});
		}
	}
	return { prepared, errorItems };
}

/** Error items made by errorItem() in this process, so a router can tell them from results. */
const ERROR_ITEMS = new WeakSet<INodeExecutionData>();

/**
 * A failed item under continueOnFail: `{ json: { error, retryable }, pairedItem: { item } }`, the
 * shape n8n moves to the error output under "Continue (using error output)". Where it goes
 * otherwise is decided by nodes/shared/outputs.ts (never a go-ahead output).
 * `retryable`: sending the same item again later can succeed as it is and cannot record it twice:
 * true when nothing was recorded for the item (the database was unreachable, a bound fired, a key
 * stayed locked), and when the connection was lost during the COMMIT (the item may have been
 * recorded) for an item whose repeat is answered from what was recorded (a Reserve of the same key,
 * an Enqueue with a dedupe key). False when the item itself, the credential or the schema must
 * change first (bad input, unknown key, permission), and for an item that may have been recorded
 * and would be recorded a second time (an Enqueue without a dedupe key).
 * A workflow can answer the first with 503 and the second with 422 (workflows/priority-producer.json).
 */
export function errorItem(fns: Pick<IExecuteFunctions, 'getNode'>, message: string, index: number, retryable = false): INodeExecutionData {
	const item: INodeExecutionData = { json: errorJson(fns, message, retryable), pairedItem: { item: index } };
	ERROR_ITEMS.add(item);
	return item;
}

/**
 * The json of an error item: `{ error, retryable }`, except under *On Error: Continue (using error
 * output)*, where it is `{ error }` alone: n8n moves an item to the error output only when `error`
 * is its only key (n8n-core's WorkflowExecute), so there the item keeps n8n's own shape.
 */
export function errorJson(fns: Pick<IExecuteFunctions, 'getNode'>, message: string, retryable: boolean): IDataObject {
	return fns.getNode().onError === 'continueErrorOutput' ? { error: message } : { error: message, retryable };
}

/** True for an item made by errorItem() (not for a result that merely has an `error` field). */
export function isErrorItem(item: INodeExecutionData): boolean {
	return ERROR_ITEMS.has(item);
}

/** Removes credentials that a driver or socket error may carry (postgres://user:password@host). */
export function scrubSecrets(message: string): string {
	return message
		.replace(/(postgres(?:ql)?:\/\/)[^@\s/]*@/gi, '$1***@')
		.replace(/(password\s*[=:]\s*)("[^"]*"|'[^']*'|\S+)/gi, '$1***');
}

/**
 * n8n's NodeOperationError replaces a whole message that merely contains a Node error code
 * (ECONNREFUSED, ETIMEDOUT, ...) with a generic sentence ("The service refused the connection"),
 * which would drop what was not recorded. The codes are spelled out in words instead.
 */
const CODE_WORDS: Record<string, string> = {
	ECONNREFUSED: 'connection refused',
	ECONNRESET: 'connection reset',
	ECONNABORTED: 'connection aborted',
	ETIMEDOUT: 'timed out',
	ENOTFOUND: 'host not found',
	EAI_AGAIN: 'host name lookup failed',
	GETADDRINFO: 'host name lookup',
	EHOSTUNREACH: 'host unreachable',
	EADDRNOTAVAIL: 'address not available',
	ERRADDRINUSE: 'address in use',
};
function spellOutCodes(text: string): string {
	return text.replace(/\b(ECONNREFUSED|ECONNRESET|ECONNABORTED|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|getaddrinfo|EHOSTUNREACH|EADDRNOTAVAIL|ERRADDRINUSE)\b/gi, (m) => CODE_WORDS[m.toUpperCase()] ?? m);
}

/** The connection failed or was lost before anything of the batch was recorded. */
function isConnectionFailure(err: CoreError): boolean {
	return err instanceof DeadlineError || (err instanceof DriverError && err.connectionFailed);
}

/**
 * Wraps a failure of the batch's database call. The batch is one statement, hence one transaction:
 * a statement that failed was rolled back, so nothing of the batch was recorded. Every item is
 * failed (continueOnFail) or the node throws. The message names the step, the number of items not
 * recorded, whether the database connection was lost, and the database's reason (credentials
 * scrubbed). One exception (OutcomeUnknownError, src/db/bounds.ts): the connection was lost while
 * the batch's COMMIT was on its way, so the batch MAY have been recorded; the message says so, and
 * each item's `retryable` says whether sending it again is safe (see errorItem). Another
 * (ReplicationUnconfirmedError, src/db/syncRep.ts): the batch WAS committed on the server, but its
 * wait for the synchronous standby was cancelled, so it may be lost if the database fails over; see
 * replicationUnconfirmed(). SQLSTATE 25006 (read-only transaction: a standby, or a primary demoted
 * by a failover) is retryable: once the credential leads to the current primary the item succeeds.
 */
export function batchFailure(
	fns: IExecuteFunctions,
	e: unknown,
	what: string,
	indexes: number[],
): INodeExecutionData[] {
	// n8n could not hand over the credential: no database was involved, the message says what to do.
	if (isCredentialLoadError(e)) {
		const message = `${what} failed and nothing of this batch was recorded (${indexes.length} item(s)): ${cutText(scrubSecrets(e.message), 1000)}`;
		if (fns.continueOnFail()) return indexes.map((i) => errorItem(fns, message, i));
		throw new NodeOperationError(fns.getNode(), message, { description: e.description ?? undefined });
	}
	const err = toCoreError(e);
	const code = (err as { code?: unknown }).code;
	const lost = isConnectionFailure(err);
	const reason = cutText(spellOutCodes(scrubSecrets(err.message)), 1000);
	const config = err instanceof InvalidSchemaNameError || err instanceof SchemaNotReadyError;
	// Input the core rejected before any SQL ran (e.g. Dequeue's batch size): the item's fault.
	const input = err instanceof InputError;
	// A file of the package is not on disk (an incomplete install): no SQL was sent.
	const install = err instanceof PackageFileMissingError;
	if (err instanceof OutcomeUnknownError) return outcomeUnknown(fns, err, what, indexes);
	if (err instanceof ReplicationUnconfirmedError) return replicationUnconfirmed(fns, err, what, indexes);
	const cause = lost
		? typeof code === 'string' && TLS_CODES.test(code)
			? `the database connection failed: SSL verification failed (${code}): check the CA certificate and that the host name matches the server certificate`
			: 'the database connection failed'
		: install
			? 'the package installation is incomplete'
			: config
				? "the credential's schema setting is not usable"
				: input
					? 'the input is not valid'
					: code === '25006'
						? 'the database is read-only here (SQLSTATE 25006: a standby, or a primary a failover demoted); the credential must lead to the current primary (its writer endpoint)'
						: `the database refused the statement${code ? ` (SQLSTATE ${code})` : ''}`;
	const message = `${what} failed and nothing of this batch was recorded (${indexes.length} item(s)): ${cause}: ${reason}`;
	if (fns.continueOnFail()) return indexes.map((i, k) => errorItem(fns, message, i, err.retryableItem(k)));
	throw new NodeOperationError(fns.getNode(), message, {
		...(input && indexes.length === 1 ? { itemIndex: indexes[0] } : {}),
		description: lost
			? 'The batch runs as one database transaction and the connection broke before its COMMIT was sent (or before anything was), so ' +
				'Postgres rolled it back. A call the database did not answer within Statement Timeout plus 2 s had its connection closed by ' +
				'the node. Running the execution again once the database is reachable is safe. The connection pool replaces broken connections by itself.'
			: install
				? 'Nothing was sent to the database. Install the package again in every n8n process that runs these nodes (main and each queue-mode worker), restart it, and run the execution again.'
				: config || input
					? 'Nothing was sent to the database. Fix the input or the credential (schema name, or apply the schema) and run the execution again.'
					: 'The batch runs as one database transaction, so no item of it was written. Fix the cause above and run the execution again.',
	});
}

/**
 * The batch's connection was lost while its COMMIT was on its way: it may have been recorded.
 * Per item: retryable when sending it again cannot record it twice (err.retryableItem, by the
 * item's position in `indexes`, which is the order the core got the items in).
 */
function outcomeUnknown(fns: IExecuteFunctions, err: OutcomeUnknownError, what: string, indexes: number[]): INodeExecutionData[] {
	const reason = cutText(spellOutCodes(scrubSecrets(String(err.cause?.message ?? err.message))), 1000);
	const head =
		`${what} may have been recorded, or not (${indexes.length} item(s)): the database connection was lost while the batch's COMMIT ` +
		`was on its way, so whether Postgres committed it is not known (${reason})`;
	const safe = `${head}. Sending this item again is safe: what was recorded answers it (it cannot be recorded twice).`;
	const unsafe =
		`${head}. Sending this item again may record it a second time: check first whether it was recorded, ` +
		'or give such items a key that deduplicates them (Enqueue: Dedupe Key).';
	if (fns.continueOnFail()) return indexes.map((i, k) => (err.retryableItem(k) ? errorItem(fns, safe, i, true) : errorItem(fns, unsafe, i, false)));
	const allSafe = indexes.every((_, k) => err.retryableItem(k));
	throw new NodeOperationError(fns.getNode(), head, {
		description: allSafe
			? 'Running the execution again is safe: Reserve answers "in progress" for a key it did record, Confirm answers "repeated", an Enqueue with a dedupe key answers "deduplicated", and a claimed task or operation is handed out again when its lease or claim ends.'
			: 'Do not simply run it again (nor let Retry On Fail do so): items without a key that deduplicates them (Enqueue without a Dedupe Key) may have been recorded and would be recorded twice. Check first, or give every task a dedupe key.',
	});
}

/**
 * The batch was committed on the database server, but the wait for its synchronous standby was
 * cancelled (src/db/syncRep.ts): recorded here, possibly lost by a failover, so no item is a
 * go-ahead. Per item: retryable when sending it again cannot record it twice (err.retryableItem, by
 * the item's position in `indexes`): a Reserve of the same key then answers In Progress (its own
 * reservation, which holds the lease until it ends and then needs reconcile), a Confirm answers
 * Repeated, a claim is handed out again when its lease ends; an Enqueue without a dedupe key would
 * enqueue the task a second time.
 */
function replicationUnconfirmed(fns: IExecuteFunctions, err: ReplicationUnconfirmedError, what: string, indexes: number[]): INodeExecutionData[] {
	const head =
		`${what} may have been recorded (${indexes.length} item(s)): ${err.message}. ` +
		'Waiting for synchronous replication did not end: no synchronous standby confirmed the commit (is the standby down, or is this a promoted standby without one of its own? see docs/high-availability.md)';
	const safe = `${head}. Sending this item again is safe: what was recorded answers it (it cannot be recorded twice).`;
	const unsafe = `${head}. Sending this item again would record it a second time: check first, or give such items a dedupe key.`;
	if (fns.continueOnFail()) return indexes.map((i, k) => (err.retryableItem(k) ? errorItem(fns, safe, i, true) : errorItem(fns, unsafe, i, false)));
	const allSafe = indexes.every((_, k) => err.retryableItem(k));
	throw new NodeOperationError(fns.getNode(), head, {
		description: allSafe
			? 'Running the execution again is safe: Reserve answers "in progress" for a key it recorded, Confirm answers "repeated", and a claimed task or operation is handed out again when its lease or claim ends. Writes keep failing this way until a synchronous standby is connected again (or synchronous_standby_names is changed).'
			: 'Do not simply run it again: items without a dedupe key (Enqueue) were recorded and would be recorded twice. Check first, or give every task a dedupe key.',
	});
}

/**
 * Read-only operations that answer one call per valid item (Admin's Get and List): gets the
 * connection once, then runs `each` for every prepared item; a failure (connection or call) is
 * that item's error on Unrecorded, the others still answer. Returns [Unrecorded, Result].
 */
export async function readEach<T>(
	fns: IExecuteFunctions,
	what: string,
	prepared: Array<Prepared<T>>,
	errorItems: INodeExecutionData[],
	each: (conn: LedgerConnection, p: Prepared<T>) => Promise<INodeExecutionData[]>,
): Promise<INodeExecutionData[][]> {
	const failed: INodeExecutionData[] = [...errorItems];
	const out: INodeExecutionData[] = [];
	if (prepared.length === 0) return [failed, out];
	let conn: LedgerConnection;
	try {
		conn = await getLedgerConnection(fns);
	} catch (e) {
		return [[...failed, ...batchFailure(fns, e, what, prepared.map((p) => p.index))], out];
	}
	for (const p of prepared) {
		try {
			out.push(...(await each(conn, p)));
		} catch (e) {
			failed.push(...batchFailure(fns, e, what, [p.index]));
		}
	}
	return [failed, out];
}
