/**
 * The trigger's engine, free of n8n: polling is the truth, LISTEN/NOTIFY a hint.
 *
 * - Every `pollMs` (and at the due time of the earliest delayed task, if sooner) it checks the
 *   queue; a notification on the queue's channel makes it act at once.
 * - A notification that says ready work was added (payload: the queue name) starts an execution
 *   at once, without the due check first (one round trip less). A notification with an empty
 *   payload (only delayed tasks were added) only makes it re-read the due time.
 * - `claimFirst` (claim mode): every wake-up claims at once, and the due check runs only when the
 *   claim comes back empty, to learn when the next task is due. After a claim that started an
 *   execution, with slots still free, it checks before claiming again (one round trip, the due
 *   check, when the queue has nothing more ready, instead of an empty claim and the check).
 * - Claim mode: when an execution finishes it claims at once only when the last check ended with
 *   every slot taken (work may have been left waiting for a slot), a hold or an outage; otherwise
 *   the queue had nothing more ready then, so it runs the due check first and claims only when work
 *   is due (a task the execution released or failed back to the queue sends no notification).
 * - Settles carried to the next claim (claim mode, `settle`): an execution's `finished` may resolve
 *   with `settle` (the trigger's Settle Tasks "When the Execution Finishes": its tasks and run).
 *   The watcher keeps it and hands every kept settle to the next fire(), which records them in the
 *   claim's own transaction (one round trip and one commit for both); with settles kept, a wake-up
 *   claims at once instead of checking first (the claim answers whether work is ready). When no
 *   claim follows (no slot, a hold, nothing due, an outage, close) they go to deps.settle() alone,
 *   at the end of that check; one that arrives after close or after its slot timed out goes there
 *   at once. close() waits for those calls.
 * - On start and on every (re)connect of the LISTEN connection it checks once, so a notification
 *   sent while it was not listening is never lost.
 * - At most `maxInFlight` executions it started may be running; a wake-up that arrives while all
 *   are busy is remembered and checked again when one finishes (or after `inFlightTimeoutMs`).
 * - The LISTEN connection is its own client (never a pooled one); when it drops, it reconnects
 *   with capped exponential backoff and jitter (1 s doubling to 30 s). Every `probeMs` (30 s) it
 *   is probed (ListenConnection.probe, bounded): a connection that died silently (a partition, a
 *   frozen server) is noticed and replaced; polling goes on meanwhile.
 * - Outages: a check or claim that fails (every one is bounded by the client, src/db/deadline.ts,
 *   so none hangs) is retried after outageRetryBaseMs (1 s) doubling up to the poll interval. The
 *   first failure is logged as a warning (with the error), later ones at debug level, and the first
 *   success after it at info level (the queue answers again, after how long).
 * - Rate (all bounded): after an execution that FAILED (its `finished` rejects or resolves to
 *   `{ failed: true }`), or that claimed nothing (wake-up mode: the check after it finds work still
 *   due and the queue's claim counter unchanged), it waits before firing again: backoffBaseMs
 *   (1 s) doubling per further such execution up to backoffCapMs (60 s); an execution that made
 *   progress resets it. Independently, at most `maxPerMinute` executions start in any 60 s window.
 *   Waiting never drops work: the check runs again when the wait ends.
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
	/**
	 * A bounded round trip on the connection (e.g. `SELECT 1`): rejects, and reports the connection
	 * lost through onLost, when it does not answer in time. Optional: without it only the
	 * connection's own errors tell that it died.
	 */
	probe?(): Promise<void>;
	close(): Promise<void>;
}

export interface WatcherDeps {
	/**
	 * Is work due now, and if not, in how many ms (null: nothing pending)? `claims`, when given: the
	 * queue's claim counter, compared after an execution to tell whether it claimed anything.
	 */
	check(): Promise<{ due: boolean; inMs: number | null; claims?: string }>;
	/**
	 * Starts one execution. Returns `finished`, a promise settling when that execution finishes
	 * (wrapped, so awaiting fire() does not wait for it), or undefined when nothing was started
	 * (claim mode found no task). Called only when work is due. `finished` rejecting or resolving
	 * to `{ failed: true }` means the execution failed (the watcher then backs off).
	 */
	fire(reason: WakeReason, settles?: unknown[]): Promise<{ finished: Promise<unknown> } | undefined>;
	/**
	 * Records settles kept for a claim that did not follow (see the header). Needed when `finished`
	 * may resolve with `settle`; fire() gets them otherwise and must record them whatever happens
	 * (also when it claims nothing or throws). Should not reject (a rejection is ignored).
	 */
	settle?: (settles: unknown[]) => Promise<void>;
	/**
	 * Claim mode: fire() claims, so call it first on every wake-up and check() only when it started
	 * nothing (to learn the next due time) or, with slots left, before claiming again; a finished
	 * execution checks first unless the last check ended with every slot taken. Default false: check
	 * first, except on a notification of ready work.
	 */
	claimFirst?: boolean;
	/**
	 * Whether a notification of ready work may fire without the due check (default true). False
	 * when the consumer claims only some groups: the notification does not say which group.
	 */
	directOnNotify?: boolean;
	/** At most this many executions start in any 60 s window (default: no cap). */
	maxPerMinute?: number;
	/** Backoff after a failed or empty execution, ms (defaults 1000 doubling to 60000). */
	backoffBaseMs?: number;
	backoffCapMs?: number;
	/** Opens a LISTEN connection; omitted when LISTEN/NOTIFY is switched off. */
	connect?: () => Promise<ListenConnection>;
	channel: string;
	pollMs: number;
	maxInFlight: number;
	inFlightTimeoutMs: number;
	log?: (level: 'debug' | 'info' | 'warn', message: string) => void;
	/** Reconnect backoff, ms (defaults 1000 and 30000). */
	reconnectBaseMs?: number;
	reconnectCapMs?: number;
	/** Ms between health probes of the LISTEN connection (default 30000). */
	probeMs?: number;
	/** First retry after a failed check or claim, ms, doubling up to pollMs (default 1000). */
	outageRetryBaseMs?: number;
}

export type WakeReason = 'start' | 'notify' | 'poll' | 'reconnect' | 'finished' | 'manual';

export class QueueWatcher {
	private closed = false;
	private inFlight = 0;
	private checking = false;
	private again: WakeReason | undefined;
	/** The last check ended with every slot taken (or failed): a finishing execution must check again. */
	private slotsWanted = true;
	private againDirect = false;
	private pollTimer: NodeJS.Timeout | undefined;
	private reconnectTimer: NodeJS.Timeout | undefined;
	private probeTimer: NodeJS.Timeout | undefined;
	/** When the current outage began (the first failed check or claim), else undefined. */
	private outageSince: number | undefined;
	private outageFailures = 0;
	private lastOutageError = '';
	private conn: ListenConnection | undefined;
	private reconnectAttempt = 0;
	private backoffLevel = 0;
	private backoffUntil = 0;
	private readonly fireTimes: number[] = [];
	/** Settles kept for the next claim (finished executions' `settle` values), oldest first. */
	private readonly pendingSettles: unknown[] = [];
	/** deps.settle() calls not yet returned (close() waits for them). */
	private readonly settling = new Set<Promise<void>>();
	/** Claim counter at the start of the last finished, not failed, wake-up execution; judged by the next check. */
	private judge: string | undefined;
	/** Counters for tests and diagnostics. */
	readonly counters = { checks: 0, fired: 0, notifications: 0, connects: 0, lost: 0, backoffs: 0, capped: 0, failed: 0, empty: 0, probes: 0, outages: 0, recoveries: 0 };

	constructor(private readonly deps: WatcherDeps) {}

	async start(): Promise<void> {
		if (this.deps.connect) await this.openListener(false);
		this.wake('start');
	}

	/**
	 * Asks for a check now (coalesced with a check already running). `direct`: work is known to be
	 * ready (a notification said so), so start an execution without the due check first.
	 */
	wake(reason: WakeReason, direct = false, checkFirst = false): void {
		if (this.closed) return;
		if (this.checking) {
			this.again = reason;
			this.againDirect = this.againDirect || direct;
			return;
		}
		void this.runCheck(reason, direct, checkFirst);
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
		if (this.probeTimer) clearInterval(this.probeTimer);
		const c = this.conn;
		this.conn = undefined;
		if (c) await c.close().catch(() => undefined);
		if (!this.checking) this.flushSettles();
		while (this.settling.size > 0) await Promise.all([...this.settling]);
	}

	/** Kept settles to deps.settle() now (fire and forget; close() waits for them). */
	private flushSettles(settles: unknown[] = this.pendingSettles.splice(0)): void {
		if (settles.length === 0 || !this.deps.settle) return;
		const p: Promise<void> = this.deps
			.settle(settles)
			.catch(() => undefined)
			.finally(() => this.settling.delete(p));
		this.settling.add(p);
	}

	/** `checkFirst` (claim mode): run the due check before the first claim. */
	private async runCheck(reason: WakeReason, direct: boolean, checkFirst = false): Promise<void> {
		this.checking = true;
		let nextMs = this.deps.pollMs;
		const claimFirst = this.deps.claimFirst === true;
		let skipCheck = direct || (claimFirst && !checkFirst);
		let retried = false;
		let reached = false;
		let wanted = true;
		try {
			while (!this.closed) {
				if (this.inFlight >= this.deps.maxInFlight) break;
				let hold = this.holdMs();
				if (hold > 0) {
					nextMs = Math.min(nextMs, hold);
					break;
				}
				let marker: string | undefined;
				// Settles kept for a claim: claim now, with them (the claim tells whether work is ready).
				if (!skipCheck && !(claimFirst && this.pendingSettles.length > 0)) {
					this.counters.checks++;
					const due = await this.deps.check();
					reached = this.reached(reached);
					this.judgeProgress(due);
					if (!due.due) {
						if (due.inMs !== null) nextMs = Math.min(nextMs, Math.max(due.inMs, 50));
						wanted = false;
						break;
					}
					hold = this.holdMs();
					if (hold > 0) {
						nextMs = Math.min(nextMs, hold);
						break;
					}
					marker = due.claims;
				}
				skipCheck = true;
				const settles = claimFirst ? this.pendingSettles.splice(0) : [];
				const started = await this.deps.fire(reason, settles.length > 0 ? settles : undefined);
				reached = this.reached(reached);
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
					wanted = false;
					break;
				}
				this.counters.fired++;
				this.fireTimes.push(Date.now());
				this.track(started.finished, marker);
				// Claim mode with slots left: the due check tells whether to claim again (an empty
				// claim would cost a round trip and then the check anyway). Wake-up mode checks first
				// always (the consumer claims, not this loop).
				skipCheck = false;
			}
		} catch (e) {
			nextMs = Math.min(nextMs, this.outage(e as Error));
		} finally {
			this.checking = false;
			// Left at true when the loop ended on a full set of slots, a hold, an outage or close.
			this.slotsWanted = wanted;
		}
		// Settles no claim took: alone now, unless a wake-up waiting to run claims next.
		if (this.closed || this.again === undefined) this.flushSettles();
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

	/** A check or claim answered: ends an outage (logged once). Returns true. */
	private reached(already: boolean): boolean {
		if (already || this.outageSince === undefined) return true;
		const secs = ((Date.now() - this.outageSince) / 1000).toFixed(1);
		this.counters.recoveries++;
		this.deps.log?.(
			'info',
			`Priority Dequeue Trigger: the queue answers again after ${secs} s (${this.outageFailures} failed attempt(s); last error: ${this.lastOutageError}); checking and claiming resumed`,
		);
		this.outageSince = undefined;
		this.outageFailures = 0;
		return true;
	}

	/** A check or claim failed: logs the outage (warn once, then debug); returns ms until the next try. */
	private outage(e: Error): number {
		const base = this.deps.outageRetryBaseMs ?? 1000;
		const delay = Math.min(this.deps.pollMs, base * 2 ** Math.min(this.outageFailures, 30));
		this.outageFailures++;
		this.lastOutageError = e?.message ?? String(e);
		if (this.outageSince === undefined) {
			this.outageSince = Date.now();
			this.counters.outages++;
			this.deps.log?.('warn', `Priority Dequeue Trigger: checking the queue failed (${this.lastOutageError}); no task is claimed until a check succeeds; trying again in ${delay} ms, then less and less often (up to the poll interval)`);
		} else {
			const secs = ((Date.now() - this.outageSince) / 1000).toFixed(1);
			this.deps.log?.('debug', `Priority Dequeue Trigger: checking the queue still fails after ${secs} s (${this.lastOutageError}); trying again in ${delay} ms`);
		}
		return delay;
	}

	/** Ms to wait before the next execution may start: backoff or the per-minute cap (0: none). */
	private holdMs(): number {
		const now = Date.now();
		let hold = Math.max(0, this.backoffUntil - now);
		const cap = this.deps.maxPerMinute;
		if (cap !== undefined && cap > 0) {
			while (this.fireTimes.length > 0 && this.fireTimes[0] <= now - 60_000) this.fireTimes.shift();
			if (this.fireTimes.length >= cap) {
				this.counters.capped++;
				hold = Math.max(hold, this.fireTimes[this.fireTimes.length - cap] + 60_000 - now);
			}
		} else if (this.fireTimes.length > 1000) {
			this.fireTimes.splice(0, this.fireTimes.length - 1000);
		}
		return hold;
	}

	/** After a wake-up execution: work still due and nobody claimed since it started = it claimed nothing. */
	private judgeProgress(due: { due: boolean; claims?: string }): void {
		const judge = this.judge;
		if (judge === undefined || due.claims === undefined) return;
		this.judge = undefined;
		if (due.due && due.claims === judge) {
			this.counters.empty++;
			this.backOff('an execution claimed nothing though work is due (does the consumer Dequeue the same queue and groups?)');
		} else {
			this.backoffLevel = 0;
			this.backoffUntil = 0;
		}
	}

	private backOff(why: string): void {
		const base = this.deps.backoffBaseMs ?? 1000;
		const cap = this.deps.backoffCapMs ?? 60_000;
		this.backoffLevel = Math.min(this.backoffLevel + 1, 30);
		const delay = Math.min(cap, base * 2 ** (this.backoffLevel - 1));
		this.backoffUntil = Date.now() + delay;
		this.counters.backoffs++;
		this.deps.log?.('debug', `Priority Dequeue Trigger: ${why}; waiting ${delay} ms before the next execution`);
	}

	private track(finished: Promise<unknown>, marker: string | undefined): void {
		this.inFlight++;
		let freed = false;
		const free = (failed: boolean | undefined) => {
			if (freed) return;
			freed = true;
			clearTimeout(timer);
			this.inFlight--;
			if (failed === true) {
				this.counters.failed++;
				this.judge = undefined;
				this.backOff('an execution failed');
			} else if (failed === false) {
				if (marker !== undefined) this.judge = marker;
				else {
					this.backoffLevel = 0;
					this.backoffUntil = 0;
				}
			}
			// Through the event loop: an execution that finishes at once must not turn check → fire →
			// finish into a chain of microtasks that starves timers and I/O. Claim mode, when the last
			// check found nothing more ready: check first (one round trip when the queue is still empty).
			setImmediate(() => this.wake('finished', false, this.deps.claimFirst === true && !this.slotsWanted));
		};
		const timer = setTimeout(() => free(undefined), this.deps.inFlightTimeoutMs);
		timer.unref?.();
		finished.then(
			(v) => {
				const settle = (v as { settle?: unknown } | undefined)?.settle;
				if (settle !== undefined) {
					// Its slot timed out already, or the watcher closed: no claim will carry it.
					if (freed || this.closed) this.flushSettles([settle]);
					else this.pendingSettles.push(settle);
				}
				free((v as { failed?: unknown } | undefined)?.failed === true);
			},
			() => free(true),
		);
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
				this.wake('notify', payload !== '' && this.deps.directOnNotify !== false);
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
			this.startProbes(conn);
			// Anything notified while we were not listening: check once now.
			if (isReconnect) this.wake('reconnect');
		} catch (e) {
			// Warned once per loss; the retries of the same outage are logged at debug level.
			this.deps.log?.(this.reconnectAttempt === 0 ? 'warn' : 'debug', `Priority Dequeue Trigger: could not LISTEN (${(e as Error).message}); polling meanwhile, retrying`);
			this.scheduleReconnect();
		}
	}

	/** Probes `conn` every probeMs while it is the current connection (a failed probe reports it lost). */
	private startProbes(conn: ListenConnection): void {
		if (!conn.probe) return;
		if (this.probeTimer) clearInterval(this.probeTimer);
		let probing = false;
		const timer = setInterval(() => {
			if (this.closed || this.conn !== conn) {
				clearInterval(timer);
				if (this.probeTimer === timer) this.probeTimer = undefined;
				return;
			}
			if (probing) return;
			probing = true;
			this.counters.probes++;
			conn
				.probe!()
				.catch(() => undefined)
				.finally(() => {
					probing = false;
				});
		}, this.deps.probeMs ?? 30_000);
		timer.unref?.();
		this.probeTimer = timer;
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
