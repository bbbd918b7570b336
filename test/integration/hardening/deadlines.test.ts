/**
 * Issue 23: every wait ends within a bound the client enforces, whatever the server or the network
 * does. A loopback proxy that stops forwarding but keeps every socket open (test/helpers/
 * blackholeProxy.ts: a partition, a dead NAT entry) and a private Postgres frozen with SIGSTOP
 * (test/helpers/privatePostgres.ts): the server's statement_timeout and lock_timeout cannot fire
 * there, only the client's deadline (Statement Timeout + 2000 ms, src/db/deadline.ts) can.
 *
 * Slow, real time: about 40 s in all; every test is bounded by its own jest timeout (20 s or 30 s).
 * Credentials here use Statement Timeout 1000 ms (deadline 3000 ms), Connection Timeout 1000 ms.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { closeAllPools, getPool, type ConnectionConfig } from '../../../src/db/pool';
import { DeadlineError, OutcomeUnknownError, roundTripDeadlineMs, toBounds } from '../../../src/db/bounds';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { connectListener, enqueue, queueChannel, QueueWatcher } from '../../../src/queue';
import { migrate } from '../../../src/db/migrate';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';
import { startBlackholeProxy, type BlackholeProxy } from '../../helpers/blackholeProxy';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';

const STATEMENT_MS = 1000;
const CONNECT_MS = 1000;
const DEADLINE_MS = roundTripDeadlineMs({ statementTimeoutMs: STATEMENT_MS });
/** Scheduling slack on a shared 2-core machine. */
const SLACK_MS = 1500;

let db: Awaited<ReturnType<typeof testDatabase>>;
let proxy: BlackholeProxy;
const target = new URL(DATABASE_URL);

beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_deadline' });
});
afterAll(async () => {
	await db.drop();
});
beforeEach(async () => {
	proxy = await startBlackholeProxy(target.hostname, Number(target.port || 5432));
});
afterEach(async () => {
	await closeAllPools();
	await proxy.close();
});

let keyCounter = 0;
const reserveOne = (pool: ReturnType<typeof getPool>, c: ConnectionConfig) =>
	reserveOperations(pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: `deadline:reserve:k${++keyCounter}:v1`, request: { n: keyCounter }, leaseSeconds: 60 })], {}, toBounds(c));

function viaProxy(extra: Partial<ConnectionConfig> = {}): ConnectionConfig {
	return {
		connectionString: proxy.through(DATABASE_URL),
		ssl: 'disable',
		schema: db.schema,
		autoApplySchema: false,
		maxConnections: 2,
		connectTimeoutMs: CONNECT_MS,
		statementTimeoutMs: STATEMENT_MS,
		lockTimeoutMs: 200,
		...extra,
	};
}

describe('a network that stops answering (blackhole proxy)', () => {
	it(
		'warm pool, every slot hung: each Reserve ends within the deadline, the hung connections are destroyed, and after the heal the same credential works (no "timeout exceeded when trying to connect")',
		async () => {
			const c = viaProxy();
			const pool = getPool(c);
			await Promise.all([reserveOne(pool, c), reserveOne(pool, c)]);
			expect(pool.totalCount).toBe(2);
			proxy.blackhole();
			const t0 = Date.now();
			// Four calls on two slots: two hang on the wire, two wait for a slot.
			const results = await Promise.allSettled([1, 2, 3, 4].map(() => reserveOne(pool, c)));
			const elapsed = Date.now() - t0;
			expect(elapsed).toBeLessThan(DEADLINE_MS + SLACK_MS);
			expect(results.every((r) => r.status === 'rejected')).toBe(true);
			const errors = results.map((r) => (r as PromiseRejectedResult).reason as Error);
			// The two on the wire: their one round trip carried the COMMIT, so the outcome is unknown
			// (a Reserve of the same key again is safe).
			const unknown = errors.filter((e) => e instanceof OutcomeUnknownError) as OutcomeUnknownError[];
			expect(unknown).toHaveLength(2);
			for (const e of unknown) {
				expect(e.cause).toBeInstanceOf(DeadlineError);
				expect(e.retryableItem(0)).toBe(true);
			}
			// The hung connections were destroyed, not returned to the pool.
			await waitFor(() => pool.totalCount === 0, { what: 'the pool dropped its hung connections', timeoutMs: 2000 });
			proxy.heal();
			const t1 = Date.now();
			const after = await Promise.all([1, 2, 3, 4].map(() => reserveOne(pool, c)));
			expect(after.map(([r]) => r.outcome)).toEqual(['proceed', 'proceed', 'proceed', 'proceed']);
			expect(Date.now() - t1).toBeLessThan(SLACK_MS + 1000);
		},
		30_000,
	);

	it(
		'cold pool: the first call fails within the Connection Timeout',
		async () => {
			proxy.blackhole();
			const c = viaProxy({ maxConnections: 3 });
			const t0 = Date.now();
			await expect(reserveOne(getPool(c), c)).rejects.toThrow(/timeout/i);
			expect(Date.now() - t0).toBeLessThan(CONNECT_MS + SLACK_MS);
		},
		20_000,
	);

	it(
		"the COMMIT reached Postgres but its answer was lost: Enqueue says the batch MAY have been recorded, not safe to repeat without dedupe keys, safe with them; the tasks are stored",
		async () => {
			const c = viaProxy();
			const pool = getPool(c);
			const queue = 'deadline-commit-lost';
			// Warm (and past the schema check) so the armed pattern meets the Enqueue's own round trip.
			await enqueue(pool, db.ledgerSchema, [{ queue, group: 'normal', payload: { warm: true } }], {}, toBounds(c));
			const plain = Array.from({ length: 100 }, (_, i) => ({ queue, group: 'normal', payload: { i } }));
			const dropped = proxy.dropReplyAfter('COMMIT');
			const t0 = Date.now();
			const err = (await enqueue(pool, db.ledgerSchema, plain, {}, toBounds(c)).catch((e: unknown) => e)) as OutcomeUnknownError;
			await dropped;
			expect(Date.now() - t0).toBeLessThan(DEADLINE_MS + SLACK_MS);
			expect(err).toBeInstanceOf(OutcomeUnknownError);
			expect(err.message).toMatch(/may have recorded the batch, or not/);
			expect([0, 50, 99].map((i) => err.retryableItem(i))).toEqual([false, false, false]);
			const stored = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.queue_tasks WHERE queue = $1 AND payload ? 'i'`, [queue]);
			expect(stored.rows[0].n).toBe(100);

			const keyed = [
				{ queue, group: 'normal', payload: { k: 1 }, dedupeKey: 'order-1' },
				{ queue, group: 'normal', payload: { k: 2 } },
			];
			const dropped2 = proxy.dropReplyAfter('COMMIT');
			const err2 = (await enqueue(pool, db.ledgerSchema, keyed, {}, toBounds(c)).catch((e: unknown) => e)) as OutcomeUnknownError;
			await dropped2;
			expect(err2).toBeInstanceOf(OutcomeUnknownError);
			expect([err2.retryableItem(0), err2.retryableItem(1)]).toEqual([true, false]);
			// Sending the keyed task again is answered from what was recorded.
			const [again] = await enqueue(pool, db.ledgerSchema, [keyed[0]], {}, toBounds(c));
			expect(again.deduplicated).toBe(true);
		},
		30_000,
	);

	it(
		'a LISTEN connection that died silently is noticed by its bounded probe and replaced after the heal; notifications arrive again',
		async () => {
			const c = viaProxy();
			const channel = queueChannel(db.ledgerSchema, 'deadline-listen');
			const logs: string[] = [];
			const watcher = new QueueWatcher({
				channel,
				// Polling effectively off: only LISTEN can bring the notification.
				pollMs: 3_600_000,
				maxInFlight: 1,
				inFlightTimeoutMs: 1000,
				check: async () => ({ due: false, inMs: null }),
				fire: async () => undefined,
				connect: () => connectListener(c),
				probeMs: 500,
				reconnectBaseMs: 200,
				reconnectCapMs: 500,
				log: (level, m) => logs.push(`${level}: ${m}`),
			});
			try {
				await watcher.start();
				expect(watcher.listening).toBe(true);
				proxy.blackhole();
				const t0 = Date.now();
				await waitFor(() => watcher.counters.lost >= 1, { what: 'the probe noticed the dead LISTEN connection', timeoutMs: 500 + CONNECT_MS + SLACK_MS });
				expect(Date.now() - t0).toBeLessThan(500 + CONNECT_MS + SLACK_MS);
				expect(logs.some((l) => /LISTEN connection lost/.test(l))).toBe(true);
				proxy.heal();
				await waitFor(() => watcher.listening && watcher.counters.connects >= 2, { what: 'a new LISTEN connection', timeoutMs: 5000 });
				const before = watcher.counters.notifications;
				await db.pool.query('SELECT pg_notify($1, $2)', [channel, 'deadline-listen']);
				await waitFor(() => watcher.counters.notifications > before, { what: 'the notification on the new connection', timeoutMs: 3000 });
			} finally {
				await watcher.close();
			}
		},
		30_000,
	);
});

describe('a frozen server (SIGSTOP of a private Postgres)', () => {
	const FROZEN = ledgerSchema('ol_frozen');
	let pg: PrivatePostgres;
	beforeAll(async () => {
		pg = await startPrivatePostgres({ name: 'deadlines' });
		const setup = getPool({ connectionString: pg.url, ssl: 'disable', schema: 'ol_frozen', autoApplySchema: true });
		await migrate(setup, FROZEN, true);
		await closeAllPools();
	}, 60_000);
	afterAll(async () => {
		await closeAllPools();
		await pg?.destroy();
	});
	afterEach(() => {
		pg.thaw();
	});
	const frozenCfg = (extra: Partial<ConnectionConfig> = {}): ConnectionConfig => ({
		connectionString: pg.url,
		ssl: 'disable',
		schema: 'ol_frozen',
		autoApplySchema: false,
		maxConnections: 2,
		connectTimeoutMs: CONNECT_MS,
		statementTimeoutMs: STATEMENT_MS,
		lockTimeoutMs: 200,
		...extra,
	});
	const reserveFrozen = (pool: ReturnType<typeof getPool>, c: ConnectionConfig) =>
		reserveOperations(pool, FROZEN, [prepareReserveItem(0, { operationKey: `frozen:reserve:k${++keyCounter}:v1`, request: { n: keyCounter }, leaseSeconds: 60 })], {}, toBounds(c));

	it(
		'warm pool: a call ends within the deadline instead of waiting for the server; after SIGCONT the same credential works',
		async () => {
			const c = frozenCfg();
			const pool = getPool(c);
			await reserveFrozen(pool, c);
			expect(pg.freeze().length).toBeGreaterThan(1);
			const t0 = Date.now();
			const err = await reserveFrozen(pool, c).catch((e: unknown) => e);
			expect(Date.now() - t0).toBeLessThan(DEADLINE_MS + SLACK_MS);
			expect(err).toBeInstanceOf(OutcomeUnknownError);
			expect((err as OutcomeUnknownError).cause).toBeInstanceOf(DeadlineError);
			await waitFor(() => pool.totalCount === 0, { what: 'the pool dropped the hung connection', timeoutMs: 2000 });
			pg.thaw();
			const [r] = await reserveFrozen(pool, c);
			expect(r.outcome).toBe('proceed');
		},
		30_000,
	);

	it(
		'cold pool: connecting to a frozen server fails within the Connection Timeout',
		async () => {
			pg.freeze();
			const c = frozenCfg({ maxConnections: 3 });
			const t0 = Date.now();
			await expect(reserveFrozen(getPool(c), c)).rejects.toThrow(/timeout/i);
			expect(Date.now() - t0).toBeLessThan(CONNECT_MS + SLACK_MS);
		},
		20_000,
	);
});
