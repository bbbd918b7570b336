/**
 * The trigger's engine: checks on start, on notification, on poll and after a reconnect; never
 * more executions in flight than allowed; reconnects the LISTEN connection after it drops.
 */
import { QueueWatcher, type ListenConnection, type WatcherDeps } from '../../../src/queue/watcher';

// The watcher's timers (poll, reconnect backoff, in-flight timeout, rate window) run on Jest's fake
// clock: `tick(ms)` moves it on by ms and runs what falls due (and the promises they settle), so no
// test waits for real time to pass.
const tick = (ms = 20) => jest.advanceTimersByTimeAsync(ms);

class FakeConn implements ListenConnection {
	notify?: (payload?: string) => void;
	lost?: (e?: Error) => void;
	channels: string[] = [];
	closed = false;
	async listen(channel: string) {
		this.channels.push(channel);
	}
	onNotification(fn: (payload?: string) => void) {
		this.notify = fn;
	}
	onLost(fn: (e?: Error) => void) {
		this.lost = fn;
	}
	async close() {
		this.closed = true;
	}
}

function setup(over: Partial<WatcherDeps> & { dueQueue?: boolean[] } = {}) {
	const state = { due: false, fired: [] as string[], finishers: [] as Array<() => void>, conns: [] as FakeConn[] };
	const deps: WatcherDeps = {
		channel: 'oplq_abc',
		pollMs: 60_000,
		maxInFlight: 1,
		inFlightTimeoutMs: 60_000,
		reconnectBaseMs: 10,
		reconnectCapMs: 40,
		check: async () => ({ due: state.due, inMs: state.due ? 0 : null }),
		fire: async (reason) => {
			state.fired.push(reason);
			let finish!: () => void;
			const finished = new Promise<void>((r) => (finish = r));
			state.finishers.push(() => {
				finish();
			});
			return { finished };
		},
		connect: async () => {
			const c = new FakeConn();
			state.conns.push(c);
			return c;
		},
		...over,
	};
	return { state, watcher: new QueueWatcher(deps) };
}

describe('QueueWatcher', () => {
	let watchers: QueueWatcher[] = [];
	beforeEach(() => {
		jest.useFakeTimers();
	});
	afterEach(async () => {
		await Promise.all(watchers.map((w) => w.close()));
		watchers = [];
		jest.useRealTimers();
	});
	const track = <T extends { watcher: QueueWatcher }>(x: T) => {
		watchers.push(x.watcher);
		return x;
	};

	test('checks once on start and fires when work is already waiting', async () => {
		const { state, watcher } = track(setup());
		state.due = true;
		await watcher.start();
		await tick();
		expect(state.fired).toEqual(['start']);
		expect(state.conns[0].channels).toEqual(['oplq_abc']);
	});

	test('a notification wakes it; at most maxInFlight executions; a finished one lets the next start', async () => {
		const { state, watcher } = track(setup({ maxInFlight: 2 }));
		await watcher.start();
		await tick();
		expect(state.fired).toEqual([]);
		state.due = true;
		state.conns[0].notify?.();
		await tick();
		expect(state.fired).toEqual(['notify', 'notify']);
		expect(watcher.executionsInFlight).toBe(2);
		state.conns[0].notify?.();
		await tick();
		expect(state.fired).toHaveLength(2);
		state.finishers[0]();
		await tick();
		expect(state.fired).toEqual(['notify', 'notify', 'finished']);
		state.due = false;
		state.finishers[1]();
		state.finishers[2]();
		await tick();
		expect(watcher.executionsInFlight).toBe(0);
		expect(state.fired).toHaveLength(3);
	});

	test('polling finds work without any notification', async () => {
		const { state, watcher } = track(setup({ pollMs: 30, connect: undefined }));
		await watcher.start();
		state.due = true;
		await tick(120);
		expect(state.fired[0]).toBe('poll');
	});

	test('a dropped LISTEN connection is reopened and the queue checked once after the reconnect', async () => {
		const { state, watcher } = track(setup());
		await watcher.start();
		await tick();
		state.due = true; // work arrived while the connection was down: its notification is lost
		state.conns[0].lost?.(new Error('terminated'));
		expect(state.conns[0].closed).toBe(true);
		expect(watcher.listening).toBe(false);
		await tick(100);
		expect(state.conns).toHaveLength(2);
		expect(watcher.listening).toBe(true);
		expect(state.fired).toEqual(['reconnect']);
	});

	test('a failing connect is retried with backoff while polling goes on', async () => {
		let attempts = 0;
		const { state, watcher } = track(
			setup({
				pollMs: 30,
				connect: async () => {
					attempts++;
					if (attempts < 3) throw new Error('ECONNREFUSED');
					const c = new FakeConn();
					state.conns.push(c);
					return c;
				},
			}),
		);
		await watcher.start();
		state.due = true;
		await tick(200);
		expect(attempts).toBe(3);
		expect(watcher.listening).toBe(true);
		expect(state.fired.length).toBeGreaterThanOrEqual(1);
	});

	test('a failing check is logged and retried at the next poll', async () => {
		const logs: string[] = [];
		let calls = 0;
		const { state, watcher } = track(
			setup({
				pollMs: 30,
				connect: undefined,
				log: (_l, m) => logs.push(m),
				check: async () => {
					calls++;
					if (calls === 1) throw new Error('db down');
					return { due: true, inMs: 0 };
				},
			}),
		);
		await watcher.start();
		await tick(120);
		expect(logs[0]).toMatch(/db down/);
		expect(state.fired).toEqual(['poll']);
	});

	test('an execution that never reports back stops counting after the timeout', async () => {
		const { state, watcher } = track(setup({ inFlightTimeoutMs: 40 }));
		state.due = true;
		await watcher.start();
		await tick();
		expect(state.fired).toEqual(['start']);
		await tick(100);
		expect(state.fired.slice(0, 2)).toEqual(['start', 'finished']);
	});

	test('wake-up mode: a notification of ready work fires at once, without the due check first', async () => {
		const { state, watcher } = track(setup());
		await watcher.start();
		await tick();
		const checksBefore = watcher.counters.checks;
		state.due = true;
		state.conns[0].notify?.('the-queue');
		await tick();
		expect(state.fired).toEqual(['notify']);
		// The only check was none: the notification itself said work is ready. (With one execution
		// allowed, the loop stops there; the finished execution checks again.)
		expect(watcher.counters.checks).toBe(checksBefore);
	});

	test('a notification of delayed work only (empty payload) checks first and fires nothing before it is due', async () => {
		const { state, watcher } = track(setup());
		await watcher.start();
		await tick();
		const checksBefore = watcher.counters.checks;
		state.conns[0].notify?.('');
		await tick();
		expect(state.fired).toEqual([]);
		expect(watcher.counters.checks).toBe(checksBefore + 1);
	});

	test('claim mode: a wake-up claims first; with slots left the due check decides whether to claim again', async () => {
		const calls: string[] = [];
		let ready = 0;
		let unlisted = false; // due work the claim does not take (a group it does not list)
		const { state, watcher } = track(
			setup({
				claimFirst: true,
				maxInFlight: 3,
				check: async () => {
					calls.push('check');
					return ready > 0 || unlisted ? { due: true, inMs: 0 } : { due: false, inMs: null };
				},
				fire: async (reason) => {
					calls.push(`claim:${reason}`);
					if (ready === 0) return undefined;
					ready--;
					state.fired.push(reason);
					return { finished: new Promise<void>((r) => state.finishers.push(r)) };
				},
			}),
		);
		await watcher.start();
		await tick();
		expect(calls).toEqual(['claim:start', 'check']);
		calls.length = 0;
		ready = 2;
		state.conns[0].notify?.('q');
		await tick();
		// Claims at once; after each claim that started an execution, the due check says whether
		// to claim again; the last check (nothing due) ends it without an empty claim.
		expect(calls).toEqual(['claim:notify', 'check', 'claim:notify', 'check']);
		expect(watcher.executionsInFlight).toBe(2);
		calls.length = 0;
		ready = 5;
		state.conns[0].notify?.('');
		await tick();
		// Only one slot left: one claim, no check.
		expect(calls).toEqual(['claim:notify']);
		expect(watcher.executionsInFlight).toBe(3);
		// Due work the claim does not take: claimed once more after the check, then left to the poll.
		calls.length = 0;
		ready = 0;
		unlisted = true;
		state.finishers.shift()!();
		await tick();
		expect(calls).toEqual(['claim:finished', 'check', 'claim:finished', 'check']);
	});

	test('claim mode: a finished execution claims at once only when the slots were all taken, else checks first', async () => {
		const calls: string[] = [];
		let ready = 0;
		const { state, watcher } = track(
			setup({
				claimFirst: true,
				maxInFlight: 2,
				check: async () => {
					calls.push('check');
					return ready > 0 ? { due: true, inMs: 0 } : { due: false, inMs: null };
				},
				fire: async (reason) => {
					calls.push(`claim:${reason}`);
					if (ready === 0) return undefined;
					ready--;
					return { finished: new Promise<void>((r) => state.finishers.push(r)) };
				},
			}),
		);
		await watcher.start();
		await tick();
		// Three ready, two slots: the third waits for a slot, so a finish claims at once.
		ready = 3;
		state.conns[0].notify?.('q');
		await tick();
		expect(watcher.executionsInFlight).toBe(2);
		calls.length = 0;
		state.finishers.shift()!();
		await tick();
		expect(calls).toEqual(['claim:finished']);
		expect(watcher.executionsInFlight).toBe(2);
		// The queue is empty now, but the last check ended with both slots taken: claim at once.
		calls.length = 0;
		state.finishers.shift()!();
		await tick();
		expect(calls).toEqual(['claim:finished', 'check']);
		expect(watcher.executionsInFlight).toBe(1);
		// Nothing was ready when that check ran: the next finish checks first and claims nothing.
		calls.length = 0;
		state.finishers.shift()!();
		await tick();
		expect(calls).toEqual(['check']);
		expect(watcher.executionsInFlight).toBe(0);
		// A task put back without a notification (a release, a retry) while one runs: the check after
		// its finish sees it due and claims it.
		ready = 1;
		watcher.wake('manual');
		await tick();
		expect(watcher.executionsInFlight).toBe(1);
		ready = 1; // the execution released its task
		calls.length = 0;
		state.finishers.shift()!();
		await tick();
		expect(calls).toEqual(['check', 'claim:finished', 'check']);
		expect(watcher.executionsInFlight).toBe(1);
	});

	test('claim mode: a finished execution\'s settle rides on the next claim; with none to follow it is sent alone', async () => {
		const calls: string[] = [];
		const settledAlone: unknown[][] = [];
		let ready = 0;
		type Finish = (v: unknown) => void;
		const finishers: Finish[] = [];
		const { state, watcher } = track(
			setup({
				claimFirst: true,
				maxInFlight: 1,
				check: async () => {
					calls.push('check');
					return ready > 0 ? { due: true, inMs: 0 } : { due: false, inMs: null };
				},
				fire: async (reason, settles) => {
					calls.push(`claim:${reason}${settles ? `+${settles.join(',')}` : ''}`);
					if (ready === 0) return undefined;
					ready--;
					return { finished: new Promise<unknown>((r) => finishers.push(r)) };
				},
				settle: async (settles) => {
					calls.push(`settle:${settles.join(',')}`);
					settledAlone.push(settles);
				},
			}),
		);
		await watcher.start();
		await tick();
		ready = 2;
		state.conns[0].notify?.('q');
		await tick();
		expect(watcher.executionsInFlight).toBe(1);
		// Work left waiting for the slot: the finish claims at once, with the settle.
		calls.length = 0;
		finishers.shift()!({ failed: false, settle: 'A' });
		await tick();
		expect(calls).toEqual(['claim:finished+A']);
		// The queue is empty now; the last check was skipped (slot full), so it claims at once: with
		// the settle, and an empty claim then checks. Nothing is settled twice.
		calls.length = 0;
		finishers.shift()!({ failed: false, settle: 'B' });
		await tick();
		expect(calls).toEqual(['claim:finished+B', 'check']);
		expect(settledAlone).toEqual([]);
		// Even when the last check found nothing ready (it would check first), a kept settle makes
		// it claim at once: the claim answers for the check.
		ready = 1;
		watcher.wake('manual');
		await tick();
		calls.length = 0;
		finishers.shift()!({ failed: false, settle: 'C' });
		await tick();
		expect(calls).toEqual(['claim:finished+C', 'check']);
		// A failed execution backs off: no claim follows, so its settle goes alone at once.
		ready = 1;
		watcher.wake('manual');
		await tick();
		calls.length = 0;
		finishers.shift()!({ failed: true, settle: 'D' });
		await tick();
		expect(calls).toEqual(['settle:D']);
		expect(settledAlone).toEqual([['D']]);
	});

	test('claim mode: a settle that arrives after its slot timed out, or after close, is sent alone; close waits for it', async () => {
		let release!: () => void;
		const settled: unknown[][] = [];
		let ready = 1;
		let finish!: (v: unknown) => void;
		const { watcher } = track(
			setup({
				claimFirst: true,
				connect: undefined,
				inFlightTimeoutMs: 1000,
				check: async () => ({ due: false, inMs: null }),
				fire: async () => {
					if (ready === 0) return undefined;
					ready--;
					return { finished: new Promise<unknown>((r) => (finish = r)) };
				},
				settle: async (settles) => {
					await new Promise<void>((r) => (release = r));
					settled.push(settles);
				},
			}),
		);
		await watcher.start();
		await tick();
		expect(watcher.executionsInFlight).toBe(1);
		await tick(1100); // the slot's timeout: freed without a run
		expect(watcher.executionsInFlight).toBe(0);
		finish({ failed: false, settle: 'late' });
		await tick();
		expect(settled).toEqual([]); // sent, waiting for the database
		let closed = false;
		const closing = watcher.close().then(() => (closed = true));
		await tick();
		expect(closed).toBe(false); // close waits for the settle call
		release();
		await closing;
		expect(settled).toEqual([['late']]);
	});

	test('claim mode: an empty claim learns the next due time and polls then', async () => {
		let due = false;
		let claims = 0;
		const { watcher } = track(
			setup({
				claimFirst: true,
				connect: undefined,
				check: async () => (due ? { due: true, inMs: 0 } : { due: false, inMs: 60 }),
				fire: async () => {
					claims++;
					return undefined;
				},
			}),
		);
		await watcher.start();
		await tick(10);
		expect(claims).toBe(1);
		await tick(150); // the due time (60 ms) came: claimed again, without any notification
		expect(claims).toBeGreaterThanOrEqual(2);
		// Due now but this claim takes nothing (for example groups it does not list): one more claim,
		// then it waits for the next poll instead of spinning.
		due = true;
		const before = claims;
		watcher.wake('manual');
		await tick(100);
		expect(claims - before).toBe(2);
	});

	test('close stops everything and closes the connection', async () => {
		const { state, watcher } = setup({ pollMs: 20 });
		await watcher.start();
		await watcher.close();
		state.due = true;
		state.conns[0].notify?.();
		await tick(80);
		expect(state.fired).toEqual([]);
		expect(state.conns[0].closed).toBe(true);
	});

	test('a failed execution backs off: 1, 2, 4 … times the base, capped; a good one resets it', async () => {
		const outcomes: boolean[] = [];
		const times: number[] = [];
		let failing = true;
		const { state, watcher } = track(
			setup({
				pollMs: 10,
				backoffBaseMs: 40,
				backoffCapMs: 160,
				connect: undefined,
				fire: async () => {
					times.push(Date.now());
					outcomes.push(failing);
					return { finished: Promise.resolve({ failed: failing }) };
				},
			}),
		);
		state.due = true;
		await watcher.start();
		await tick(700);
		const gaps = times.slice(1, 6).map((t, i) => t - times[i]);
		// Waits after each failure: 40, 80, 160, 160 (capped) ms, each at least that long.
		expect(gaps.slice(0, 4).map((g, i) => g >= [40, 80, 160, 160][i] - 5)).toEqual([true, true, true, true]);
		expect(watcher.counters.failed).toBeGreaterThanOrEqual(4);
		failing = false;
		await tick(200);
		const n = times.length;
		await tick(60);
		// Succeeding executions with work still due: no more waiting (poll every 10 ms).
		expect(times.length - n).toBeGreaterThanOrEqual(3);
	});

	test('wake-up: an execution after which work is still due and the claim counter did not move counts as empty', async () => {
		let claims = 0;
		let claimsPerRun = 0;
		const times: number[] = [];
		const { state, watcher } = track(
			setup({
				pollMs: 10,
				backoffBaseMs: 50,
				backoffCapMs: 50,
				connect: undefined,
				check: async (): ReturnType<WatcherDeps['check']> => ({ due: state.due, inMs: state.due ? 0 : null, claims: String(claims) }),
				fire: async () => {
					times.push(Date.now());
					claims += claimsPerRun;
					return { finished: Promise.resolve({ failed: false }) };
				},
			}),
		);
		state.due = true;
		await watcher.start();
		await tick(330);
		// Claims nothing: one start per 50 ms backoff, about 6 in 330 ms (not one per 10 ms poll).
		expect(times.length).toBeGreaterThanOrEqual(3);
		expect(times.length).toBeLessThanOrEqual(8);
		expect(watcher.counters.empty).toBeGreaterThanOrEqual(2);
		claimsPerRun = 1;
		await tick(60);
		const n = times.length;
		await tick(100);
		expect(times.length - n).toBeGreaterThanOrEqual(5);
	});

	test('at most maxPerMinute executions start in 60 s; a notification with a group filter checks first', async () => {
		let checks = 0;
		const { state, watcher } = track(
			setup({
				pollMs: 10,
				maxPerMinute: 3,
				directOnNotify: false,
				check: async (): ReturnType<WatcherDeps['check']> => {
					checks++;
					return { due: state.due, inMs: state.due ? 0 : null };
				},
				fire: async (reason) => {
					state.fired.push(reason);
					return { finished: Promise.resolve({ failed: false }) };
				},
			}),
		);
		await watcher.start();
		await tick();
		const before = checks;
		state.conns[0].notify?.('ready');
		await tick();
		// Not due (another group's work): the notification was checked, nothing fired.
		expect(checks).toBeGreaterThan(before);
		expect(state.fired).toEqual([]);
		state.due = true;
		await tick(200);
		expect(state.fired).toHaveLength(3);
		expect(watcher.counters.capped).toBeGreaterThan(0);
	});
});
