/**
 * The trigger's engine, free of n8n: polling is the truth, LISTEN/NOTIFY a hint.
 *
 * - Every `pollMs` (and at the due time of the earliest delayed task, if sooner) it checks the
 *   queue; a notification on the queue's channel makes it act at once.
 * - A notification that says ready work was added (payload: the queue name) starts an execution
 *   at once, without the due check first (one round trip less). A notification with an empty
 *   payload (only delayed tasks were added) only makes it re-read the due time.
 * - `claimFirst` (claim mode): every wake-up claims at once, and the due check runs only when the
 *   claim comes back empty, to learn when the next task is due.
 * - On start and on every (re)connect of the LISTEN connection it checks once, so a notification
 *   sent while it was not listening is never lost.
 * - At most `maxInFlight` executions it started may be running; a wake-up that arrives while all
 *   are busy is remembered and checked again when one finishes (or after `inFlightTimeoutMs`).
 * - The LISTEN connection is its own client (never a pooled one); when it drops, it reconnects
 *   with capped exponential backoff and jitter (1 s doubling to 30 s).
 * - Several mains or workers may run watchers on one queue: a wake-up only starts a consumer that
 *   claims with FOR UPDATE SKIP LOCKED, and in claim mode the watcher claims with the same
 *   statement, so no task is handed out twice.
 */

export interface ListenConnection {
	/** Resolves once LISTEN is in place. */
	listen(channel: string): Promise<void>;
	/** `payload`: the notification's payload ('' = only delayed work was added). */
	onNotification(fn: (payload?: string) => void): void;
	/** Called once when the connection fails or ends. */
	onLost(fn: (e?: Error) => void): void;
	close(): Promise<void>;
}

export interface WatcherDeps {
	/** Is work due now, and if not, in how many ms (null: nothing pending)? */
	check(): Promise<{ due: boolean; inMs: number | null }>;
	/**
	 * Starts one execution. Returns `finished`, a promise settling when that execution finishes
	 * (wrapped, so awaiting fire() does not wait for it), or undefined when nothing was started
	 * (claim mode found no task). Called only when work is due.
	 */
	fire(reason: WakeReason): Promise<{ finished: Promise<unknown> } | undefined>;
	/**
	 * Claim mode: fire() claims, so call it first on every wake-up and check() only when it started
	 * nothing (to learn the next due time). Default false: check first, except on a notification of
	 * ready work.
	 */
	claimFirst?: boolean;
	/** Opens a LISTEN connection; omitted when LISTEN/NOTIFY is switched off. */
	connect?: () => Promise<ListenConnection>;
	channel: string;
	pollMs: number;
	maxInFlight: number;
	inFlightTimeoutMs: number;
	log?: (level: 'debug' | 'warn', message: string) => void;
	/** Reconnect backoff, ms (defaults 1000 and 30000). */
	reconnectBaseMs?: number;
	reconnectCapMs?: number;
}

export type WakeReason = 'start' | 'notify' | 'poll' | 'reconnect' | 'finished' | 'manual';

export class QueueWatcher {
	private closed = false;
	private inFlight = 0;
	private checking = false;
	private again: WakeReason | undefined;
	private againDirect = false;
	private pollTimer: NodeJS.Timeout | undefined;
	private reconnectTimer: NodeJS.Timeout | undefined;
	private conn: ListenConnection | undefined;
	private reconnectAttempt = 0;
	/** Counters for tests and diagnostics. */
	readonly counters = { checks: 0, fired: 0, notifications: 0, connects: 0, lost: 0 };

	constructor(private readonly deps: WatcherDeps) {}

	async start(): Promise<void> {
		if (this.deps.connect) await this.openListener(false);
		this.wake('start');
	}

	/**
	 * Asks for a check now (coalesced with a check already running). `direct`: work is known to be
	 * ready (a notification said so), so start an execution without the due check first.
	 */
	wake(reason: WakeReason, direct = false): void {
		if (this.closed) return;
		if (this.checking) {
			this.again = reason;
			this.againDirect = this.againDirect || direct;
			return;
		}
		void this.runCheck(reason, direct);
	}

	get executionsInFlight(): number {
		return this.inFlight;
	}

	get listening(): boolean {
		return this.conn !== undefined;
	}

	async close(): Promise<void> {
		this.closed = true;
		if (this.pollTimer) clearTimeout(this.pollTimer);
		if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
		const c = this.conn;
		this.conn = undefined;
		if (c) await c.close().catch(() => undefined);
	}

	private async runCheck(reason: WakeReason, direct: boolean): Promise<void> {
		this.checking = true;
		let nextMs = this.deps.pollMs;
		const claimFirst = this.deps.claimFirst === true;
		let skipCheck = direct || claimFirst;
		let retried = false;
		try {
			while (!this.closed && this.inFlight < this.deps.maxInFlight) {
				if (!skipCheck) {
					this.counters.checks++;
					const due = await this.deps.check();
					if (!due.due) {
						if (due.inMs !== null) nextMs = Math.min(nextMs, Math.max(due.inMs, 50));
						break;
					}
				}
				skipCheck = claimFirst;
				const started = await this.deps.fire(reason);
				if (!started) {
					if (claimFirst) {
						// Nothing claimable: learn when the next task is due.
						this.counters.checks++;
						const due = await this.deps.check();
						if (due.due && !retried) {
							// It became due between the claim and the check: claim once more. (Still due
							// after that: work this claim does not take, such as groups it does not list;
							// the next poll looks again.)
							retried = true;
							continue;
						}
						if (!due.due && due.inMs !== null) nextMs = Math.min(nextMs, Math.max(due.inMs, 50));
					}
					break;
				}
				this.counters.fired++;
				this.track(started.finished);
			}
		} catch (e) {
			this.deps.log?.('warn', `Priority Dequeue Trigger: checking the queue failed (${(e as Error).message}); trying again at the next poll`);
		} finally {
			this.checking = false;
		}
		if (this.closed) return;
		this.schedulePoll(nextMs);
		if (this.again) {
			const r = this.again;
			const d = this.againDirect;
			this.again = undefined;
			this.againDirect = false;
			this.wake(r, d);
		}
	}

	private track(finished: Promise<unknown>): void {
		this.inFlight++;
		let freed = false;
		const free = () => {
			if (freed) return;
			freed = true;
			clearTimeout(timer);
			this.inFlight--;
			this.wake('finished');
		};
		const timer = setTimeout(free, this.deps.inFlightTimeoutMs);
		timer.unref?.();
		finished.then(free, free);
	}

	private schedulePoll(ms: number): void {
		if (this.pollTimer) clearTimeout(this.pollTimer);
		this.pollTimer = setTimeout(() => this.wake('poll'), ms);
	}

	private async openListener(isReconnect: boolean): Promise<void> {
		if (this.closed || !this.deps.connect) return;
		try {
			const conn = await this.deps.connect();
			if (this.closed) {
				await conn.close().catch(() => undefined);
				return;
			}
			let lost = false;
			conn.onNotification((payload) => {
				this.counters.notifications++;
				// '' = only delayed tasks were added: re-read the due time; anything else: ready work.
				this.wake('notify', payload !== '');
			});
			conn.onLost((e) => {
				if (lost) return;
				lost = true;
				this.counters.lost++;
				if (this.conn === conn) this.conn = undefined;
				void conn.close().catch(() => undefined);
				if (this.closed) return;
				this.deps.log?.('warn', `Priority Dequeue Trigger: LISTEN connection lost (${e?.message ?? 'ended'}); reconnecting`);
				this.scheduleReconnect();
			});
			await conn.listen(this.deps.channel);
			this.conn = conn;
			this.counters.connects++;
			this.reconnectAttempt = 0;
			// Anything notified while we were not listening: check once now.
			if (isReconnect) this.wake('reconnect');
		} catch (e) {
			this.deps.log?.('warn', `Priority Dequeue Trigger: could not LISTEN (${(e as Error).message}); polling meanwhile, retrying`);
			this.scheduleReconnect();
		}
	}

	private scheduleReconnect(): void {
		if (this.closed || this.reconnectTimer) return;
		const base = this.deps.reconnectBaseMs ?? 1000;
		const cap = this.deps.reconnectCapMs ?? 30_000;
		const b = Math.min(cap, base * 2 ** this.reconnectAttempt++);
		const delay = b / 2 + Math.random() * (b / 2);
		this.reconnectTimer = setTimeout(() => {
			this.reconnectTimer = undefined;
			void this.openListener(true);
		}, delay);
	}
}
