/**
 * Enqueue: add a batch of tasks in one statement (one transaction, one round trip).
 */
import { ON_DUPLICATE_MODES, type EnqueueOutcome, type OnDuplicateMode, type TaskState } from './states';
import { checkKeyText } from '../keyText';
import { cutAny } from '../text';
import { queryChunked } from '../db/batch';
import { boundedQuery, type Bounds } from '../db/bounds';
import { LIMITS, TEXT_LIMITS } from '../limits';
import { assertJson, NotJsonError } from '../json/canonical';
import { markPrepared, prepareOnce } from './prepared';
import {
	checkGroupName,
	checkInt,
	checkQueueName,
	checkSeconds,
	fn,
	idText,
	iso,
	type LedgerSchema,
	type Queryable,
} from './types';
import { InputError } from '../errors';

export interface EnqueueInput {
	queue: string;
	/** Priority group name, e.g. 'high' | 'normal' | 'low' (any name a dequeue lists). */
	group: string;
	/** JSON payload (object, array or scalar); undefined is stored as {}. */
	payload?: unknown;
	/** Idempotency: while a task with this key is live (pending or processing) in the queue, it is returned instead. */
	dedupeKey?: string | null;
	/** Seconds from now before the task may be claimed (LIMITS.enqueueDelaySeconds: 0 to 31,536,000). */
	delaySeconds?: number;
	/** Not before this time (ISO-8601 string or Date). The later of this and the delay wins. */
	notBefore?: string | Date | null;
	/** Claims allowed before the task goes dead (LIMITS.maxAttempts: 1 to 1000, default 5). */
	maxAttempts?: number;
	/**
	 * When the dedupe key has a live task (ON_DUPLICATE_MODES): 'keep' (default: that task is
	 * returned unchanged, outcome duplicate), 'payload' (a pending task takes this payload, outcome
	 * replaced), 'payload_run_at' (and this item's run time: now, Not Before or the delay). A task
	 * being worked on is never changed (outcome kept_processing). Needs a dedupe key.
	 */
	onDuplicate?: OnDuplicateMode;
	/**
	 * Throttle, seconds (LIMITS.enqueueThrottleSeconds: 1 to 31,536,000): at most one task per
	 * dedupe key per window, measured from the enqueue (queue_now()) that wrote the task; an enqueue
	 * inside it answers throttled and writes nothing, even when that task has finished. Needs a
	 * dedupe key; not with onDuplicate or debounceSeconds.
	 */
	throttleSeconds?: number;
	/**
	 * Debounce, seconds (LIMITS.enqueueDebounceSeconds: 1 to 31,536,000): the task runs this long
	 * after the last enqueue of its dedupe key (trailing): an enqueue while it is pending replaces its
	 * payload and moves its run time to now + window; if it is already processing, a new task is
	 * enqueued. Needs a dedupe key; not with onDuplicate or throttleSeconds.
	 */
	debounceSeconds?: number;
	/**
	 * Serial key (docs/queue.md, "One at a time per key"): tasks of a queue that share it run one at
	 * a time, in enqueue order (task id order), while other keys and tasks without one run in
	 * parallel. A task whose key has a task ahead of it (pending, processing, retrying or dead) is
	 * stored blocked and becomes claimable when the ones ahead have left the queue (completed,
	 * cancelled, settled complete by id, purged). Key-like text, NFC, at most
	 * TEXT_LIMITS.maxSerialKeyBytes (512) bytes; null or '' = none.
	 */
	serialKey?: string | null;
}

/**
 * How an enqueue wakes listening consumers (the Priority Dequeue Trigger's LISTEN). See
 * "Notifications" in docs/queue.md for the measured costs.
 *   'commit' (default): pg_notify inside the enqueue's transaction, delivered at its commit. Exact,
 *     but every notifying commit takes Postgres' one notification lock and holds it through its WAL
 *     flush, so many concurrent single-task producers commit one at a time.
 *   'after': the enqueue commits without notifying, then a second statement (its own transaction,
 *     which writes no WAL) sends the notification. Commits of producers overlap again (group
 *     commit); one more round trip per call; the notification still follows the commit, so pickup
 *     latency is kept. If the process dies between the two, the trigger's poll finds the task.
 *     Only meaningful when `db` is a Pool (or a client in autocommit): inside your own BEGIN the
 *     second statement is part of your transaction and behaves like 'commit'.
 *   'none': no notification; consumers find the task at their next poll.
 */
export type NotifyMode = 'commit' | 'after' | 'none';
export const NOTIFY_MODES: readonly NotifyMode[] = ['commit', 'after', 'none'];

export interface EnqueueOptions {
	/** Default 'commit'. */
	notify?: NotifyMode;
}

export interface EnqueuedTask {
	/** Index of the input in the `items` array. */
	index: number;
	/** Task id (bigint as a decimal string). */
	taskId: string;
	/** True unless this call wrote a new task (outcome enqueued). */
	deduplicated: boolean;
	/** What the call did with this item (ENQUEUE_OUTCOMES). */
	outcome: EnqueueOutcome;
	queue: string;
	group: string;
	/** The task's status as this call left it; null when throttled (the task may be long gone). */
	status: TaskState | null;
	/** The task's payload as this call left it; null when throttled. */
	payload: unknown;
	dedupeKey: string | null;
	/** When the task may be claimed (ISO-8601); null when throttled. */
	availableAt: string | null;
	attempts: number | null;
	maxAttempts: number | null;
	/** When the task was enqueued (ISO-8601); when throttled, when the throttle window opened. */
	enqueuedAt: string;
	/** Throttled only: when the window ends and an enqueue of the key may write again (ISO-8601). */
	throttledUntil?: string;
}

interface Row {
	idx: number;
	id: string;
	deduplicated: boolean;
	queue: string;
	priority_group: string;
	status: TaskState | null;
	payload: unknown;
	dedupe_key: string | null;
	run_at: Date | null;
	attempts: number | null;
	max_attempts: number | null;
	enqueued_at: Date;
	outcome: EnqueueOutcome;
	window_ends_at: Date | null;
}

/**
 * ISO-8601 date-time text to a Date. The rule: a timestamp without an offset is UTC, whatever the
 * n8n process's TZ (JavaScript's Date would read it as local time, so the same workflow would
 * schedule differently on differently configured workers). `2030-12-01T10:00:00` is 10:00 UTC;
 * `2030-12-01T10:00:00+02:00` and `…Z` keep their offset.
 */
export function parseTimestamp(text: string): Date {
	const s = text.trim();
	const noOffset = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(s);
	return new Date(noOffset ? `${s.replace(' ', 'T')}Z` : s);
}

/** Earliest Not Before: 0001-01-01T00:00:00Z (ISO 8601's four-digit years; Postgres has no year 0). */
export const MIN_NOT_BEFORE_MS = Date.parse('0001-01-01T00:00:00Z');
/** Latest Not Before: 9999-12-31T23:59:59.999Z. */
export const MAX_NOT_BEFORE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** Largest task payload, as UTF-8 JSON (1 MiB): an item error above it, nothing is written. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** Plain JSON that Postgres can store (RFC 8259 values, no NUL), at most MAX_PAYLOAD_BYTES. */
function checkPayload(payload: unknown): unknown {
	try {
		assertJson(payload);
	} catch (e) {
		if (e instanceof NotJsonError) throw new InputError(`The payload is not plain JSON: ${e.message.replace(/^\$/, 'payload')}`);
		throw e;
	}
	const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
	if (bytes > MAX_PAYLOAD_BYTES) {
		throw new InputError(`The payload is ${bytes} bytes as JSON; at most ${MAX_PAYLOAD_BYTES} (1 MiB) are allowed. Store large data elsewhere and enqueue a reference to it.`);
	}
	return payload;
}

/**
 * A dedupe key: a string of key-like text (src/keyText.ts), in Unicode NFC, at most 512 bytes;
 * returned normalised (NFC). Throws InputError. Enqueue and Cancel (by key) read keys alike.
 */
export function checkDedupeKey(key: unknown): string {
	return checkQueueKey(key, 'Dedupe key', 512);
}

/**
 * A serial key: the same rules as a dedupe key (key-like text, NFC), at most
 * TEXT_LIMITS.maxSerialKeyBytes bytes; returned normalised. Throws InputError.
 */
export function checkSerialKey(key: unknown): string {
	return checkQueueKey(key, 'Serial key', TEXT_LIMITS.maxSerialKeyBytes);
}

function checkQueueKey(key: unknown, label: string, maxBytes: number): string {
	if (typeof key !== 'string') throw new InputError(`${label} must be a string of at most ${maxBytes} bytes`);
	checkKeyText(key, label, (m) => new InputError(m));
	// Normalization Form C (UAX #15), as operation keys: "é" as one code point or as "e" plus a
	// combining accent is the same key (src/ledger/validate.ts, checkOperationKey).
	const nfc = key.normalize('NFC');
	if (Buffer.byteLength(nfc, 'utf8') > maxBytes) throw new InputError(`${label} must be a string of at most ${maxBytes} bytes`);
	return nfc;
}

/**
 * Checks one input and returns it normalised (payload {} when undefined, dedupe key null when
 * empty, notBefore as ISO-8601 text or null, maxAttempts filled in), marked as prepared (see
 * prepared.ts): enqueue() does not check it again. The one place the enqueue rules live.
 * Throws InputError (InputError) with a message for the user.
 */
export function prepareEnqueueInput(input: EnqueueInput): EnqueueInput {
	const out: EnqueueInput = {
		queue: checkQueueName(input.queue),
		group: checkGroupName(input.group),
		payload: checkPayload(input.payload === undefined ? {} : input.payload),
		maxAttempts: checkInt(input.maxAttempts ?? LIMITS.maxAttempts.default, 'Max attempts', LIMITS.maxAttempts),
		dedupeKey: null,
		notBefore: null,
	};
	if (input.dedupeKey !== undefined && input.dedupeKey !== null && input.dedupeKey !== '') {
		out.dedupeKey = checkDedupeKey(input.dedupeKey);
	}
	if (input.serialKey !== undefined && input.serialKey !== null && input.serialKey !== '') {
		out.serialKey = checkSerialKey(input.serialKey);
	}
	if (input.delaySeconds !== undefined && input.delaySeconds !== null)
		out.delaySeconds = checkSeconds(input.delaySeconds, 'Delay', LIMITS.enqueueDelaySeconds);
	if (input.notBefore !== undefined && input.notBefore !== null && input.notBefore !== '') {
		const t = input.notBefore instanceof Date ? input.notBefore : parseTimestamp(String(input.notBefore));
		const shown = () => cutAny(input.notBefore instanceof Date ? 'an invalid Date' : JSON.stringify(String(input.notBefore)), 60);
		if (Number.isNaN(t.getTime())) throw new InputError(`Not before is not a valid date: ${shown()}`);
		// Postgres' timestamptz reads four-digit years only as given here (no year 0, no signed
		// six-digit ISO years): outside this range the value would fail the whole batch (22008/22009).
		if (t.getTime() < MIN_NOT_BEFORE_MS || t.getTime() > MAX_NOT_BEFORE_MS) {
			throw new InputError(`Not before must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z, got ${input.notBefore instanceof Date ? t.toISOString() : shown()}`);
		}
		out.notBefore = t.toISOString();
	}
	const onDuplicate = input.onDuplicate ?? 'keep';
	if (!(ON_DUPLICATE_MODES as readonly unknown[]).includes(onDuplicate))
		throw new InputError(`On duplicate key must be one of ${ON_DUPLICATE_MODES.join(', ')}, got ${cutAny(JSON.stringify(onDuplicate), 60)}`);
	const given = (v: unknown) => v !== undefined && v !== null && v !== '';
	const modes = [onDuplicate !== 'keep' ? 'On duplicate key' : null, given(input.throttleSeconds) ? 'Throttle' : null, given(input.debounceSeconds) ? 'Debounce' : null].filter(
		(m): m is string => m !== null,
	);
	if (modes.length > 0 && out.dedupeKey === null) throw new InputError(`${modes.join(' and ')} needs a dedupe key: the task they act on is the dedupe key's`);
	if (modes.length > 1) throw new InputError(`Use one of On duplicate key (replace), Throttle and Debounce per item, got ${modes.join(', ')}`);
	if (onDuplicate !== 'keep') out.onDuplicate = onDuplicate;
	if (given(input.throttleSeconds)) out.throttleSeconds = checkSeconds(input.throttleSeconds, 'Throttle window', LIMITS.enqueueThrottleSeconds);
	if (given(input.debounceSeconds)) out.debounceSeconds = checkSeconds(input.debounceSeconds, 'Debounce window', LIMITS.enqueueDebounceSeconds);
	return markPrepared(out);
}

/** A prepared input as queue_enqueue reads it (schema/functions/queue/queue_enqueue.sql). */
function wireItem(it: EnqueueInput): Record<string, unknown> {
	const out: Record<string, unknown> = { q: it.queue, g: it.group, p: it.payload, m: it.maxAttempts };
	if (it.dedupeKey !== null && it.dedupeKey !== undefined) out.k = it.dedupeKey;
	if (it.delaySeconds !== undefined) out.d = it.delaySeconds;
	if (it.notBefore !== null && it.notBefore !== undefined) out.at = it.notBefore;
	// Only when given: the default (keep first, no window) sends nothing more, and an item without a
	// key stays on queue_enqueue's one-statement fast path.
	if (it.onDuplicate !== undefined && it.onDuplicate !== 'keep') out.r = it.onDuplicate;
	if (it.throttleSeconds !== undefined) out.w = it.throttleSeconds;
	if (it.debounceSeconds !== undefined) out.b = it.debounceSeconds;
	if (it.serialKey !== null && it.serialKey !== undefined) out.s = it.serialKey;
	return out;
}

/**
 * Enqueues `items` atomically: all or none (one SQL statement; pass a PoolClient inside BEGIN to
 * make it part of a larger transaction). Items without a dedupe key are written by one INSERT;
 * items with one go one by one in (queue, dedupe key) order so concurrent batches cannot deadlock;
 * results come back in input order. On commit, a pg_notify on each touched queue's channel (see
 * channel.ts) wakes listening triggers: payload the queue name when ready work was added, '' when
 * only delayed tasks were. `options.notify` moves that notification after the commit or drops it
 * (see NotifyMode).
 * Inputs not made by prepareEnqueueInput are checked by it first, all before anything is sent.
 * Throws InputError for invalid input (before any write) and pg errors for database failures.
 * `bounds`: statement and lock timeouts of the enqueue's own transaction when `db` is a pool
 * (src/db/bounds.ts; LedgerBusyError when one fires, nothing was enqueued; OutcomeUnknownError when
 * the connection was lost with the COMMIT on its way: the tasks may be stored, and only those with a
 * dedupe key are safe to send again, err.retryableItem(i)). A client you pass runs
 * the enqueue in your transaction with your settings: bound it yourself (SET LOCAL).
 */
export async function enqueue(db: Queryable, schema: LedgerSchema, items: EnqueueInput[], options: EnqueueOptions = {}, bounds?: Bounds): Promise<EnqueuedTask[]> {
	const notify = options.notify ?? 'commit';
	if (!NOTIFY_MODES.includes(notify)) throw new InputError(`Notify must be one of ${NOTIFY_MODES.join(', ')}, got ${JSON.stringify(notify)}`);
	if (items.length === 0) return [];
	const quiet = notify === 'commit' ? {} : { n: false };
	// Fairness tags are reserved at enqueue by locking each group's tag row until commit (never
	// waiting for it). A Pool runs the call in its own short transaction; a client may be inside the
	// caller's longer transaction, which would keep the rows locked until it commits, so then the
	// tasks go in untagged ("t": false) and the first claim after that commit tags them
	// (docs/queue.md, "Scheduling").
	// A client: a pool's checked-out client (release) or a plain pg Client (its connection).
	const maybeInCallerTransaction = typeof (db as { release?: unknown }).release === 'function' || 'connection' in (db as object);
	const untagged = maybeInCallerTransaction ? { t: false } : {};
	const payload: Array<Record<string, unknown>> = items
		.map((it) => prepareOnce(it, prepareEnqueueInput))
		.map((it, i) => ({ i, ...wireItem(it), ...quiet, ...untagged }));
	// One statement, or chunks in one transaction for very large batches (src/db/batch.ts); items
	// with the same queue and dedupe key stay in one chunk.
	const rows = await queryChunked<Row>(
		db,
		`SELECT * FROM ${fn(schema, 'queue_enqueue')}($1::jsonb)`,
		payload.map((p) => JSON.stringify(p)),
		payload.map((p) => (p.k === undefined ? null : `${String(p.q)}\u0000${String(p.k)}`)),
		[],
		bounds,
		// Sent again, a task with a dedupe key is answered "deduplicated" while it is live; one
		// without would be enqueued a second time.
		{ repeatSafe: payload.map((p) => p.k !== undefined) },
	);
	if (notify === 'after') {
		// The same payloads as the in-transaction notification: the queue name when a task claimable
		// now was written, '' when only delayed ones were; nothing for deduplicated items.
		const ready = new Map<string, boolean>();
		for (const r of rows) {
			// A replaced task may have moved earlier: '' (re-read the due time) is always right for it.
			if (r.outcome === 'replaced') ready.set(r.queue, ready.get(r.queue) ?? false);
			if (r.deduplicated || r.run_at === null) continue;
			// Claimable now: run_at is the enqueue's own now() (= enqueued_at) unless delayed.
			const isReady = new Date(r.run_at).getTime() <= new Date(r.enqueued_at).getTime();
			ready.set(r.queue, (ready.get(r.queue) ?? false) || isReady);
		}
		if (ready.size > 0) {
			const qs = [...ready.keys()];
			// With a pool the tasks are committed by now: a notification that fails (connection lost,
			// a bound) must not turn them into an error that says they were not enqueued. It is only
			// a hint; the trigger's poll finds the tasks. (In a caller's transaction it is part of it.)
			await boundedQuery(db, `SELECT pg_notify(${fn(schema, 'queue_channel')}(x.q), x.p) FROM unnest($1::text[], $2::text[]) AS x(q, p)`, [qs, qs.map((q) => (ready.get(q) ? q : ''))], bounds, {
				readOnly: true,
			}).catch((e: unknown) => {
				if (maybeInCallerTransaction) throw e;
			});
		}
	}
	const out: EnqueuedTask[] = new Array(items.length);
	for (const r of rows) {
		out[r.idx] = {
			index: r.idx,
			taskId: idText(r.id) as string,
			deduplicated: r.deduplicated,
			outcome: r.outcome,
			queue: r.queue,
			group: r.priority_group,
			status: r.status,
			payload: r.payload,
			dedupeKey: r.dedupe_key,
			availableAt: r.run_at === null ? null : (iso(r.run_at) as string),
			attempts: r.attempts,
			maxAttempts: r.max_attempts,
			enqueuedAt: iso(r.enqueued_at) as string,
		};
		if (r.window_ends_at instanceof Date) out[r.idx].throttledUntil = iso(r.window_ends_at) as string;
	}
	return out;
}
