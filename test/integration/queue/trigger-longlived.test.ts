/**
 * The trigger lives as long as n8n, in real time against real Postgres, with
 * the node's own trigger(): the pool idle timeout is shortened through the environment
 * (OPERATION_LEDGER_POOL_IDLE_MS / _SWEEP_MS; the defaults are 5 min / 30 s), the trigger idles
 * past it, and still claims; its LISTEN backend and pool connections are killed (as by a Postgres
 * restart or pg_terminate_backend) and it recovers; its pool is evicted under the pool limit
 * between and during executions, and it keeps claiming.
 */
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import { closeAllPools, getPool, openPoolCount, poolCounters } from '../../../src/db/pool';
import { complete, enqueue, queueChannel } from '../../../src/queue';
import { activateTrigger, type ActiveTrigger } from '../../helpers/triggerHarness';
import { QUEUE_DATABASE_URL, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

let db: QueueTestDb;
const active: ActiveTrigger[] = [];
beforeAll(async () => {
	process.env.OPERATION_LEDGER_POOL_IDLE_MS = '300';
	process.env.OPERATION_LEDGER_POOL_SWEEP_MS = '100';
	db = await queueTestDb();
});
afterEach(async () => {
	await Promise.all(active.splice(0).map((t) => t.close()));
	await closeAllPools();
	delete process.env.OPERATION_LEDGER_MAX_POOLS;
});
afterAll(async () => {
	delete process.env.OPERATION_LEDGER_POOL_IDLE_MS;
	delete process.env.OPERATION_LEDGER_POOL_SWEEP_MS;
	await db.drop();
});

const credentials = (extra: IDataObject = {}): IDataObject => ({
	connectionType: 'connectionString',
	connectionString: QUEUE_DATABASE_URL,
	schema: db.schema,
	autoApplySchema: true,
	maxConnections: 3,
	...extra,
});

/** Completes every claimed task of an execution (the consumer's settle step). */
const completeAll = async (items: INodeExecutionData[]) => {
	await complete(
		db.pool,
		db.ledgerSchema,
		items.map((i) => ({ taskId: String(i.json.taskId), leaseToken: String(i.json.leaseToken) })),
	);
	return 'success' as const;
};

async function claimTrigger(queue: string, consumer = completeAll): Promise<ActiveTrigger> {
	const t = await activateTrigger({
		credentials: credentials(),
		// Polling every hour: whatever is claimed below came through LISTEN/NOTIFY (or a reconnect).
		parameters: { queue, mode: 'claim', batchSize: 10, leaseSeconds: 60, useListen: true, pollSeconds: 3600, maxInFlight: 1, options: {} },
		consumer,
	});
	active.push(t);
	return t;
}

const payloads = (t: ActiveTrigger) => t.emitted.flat().map((i) => i.json.payload);

describe('the trigger outlives pool sweeps, evictions and lost connections', () => {
	test('idles past the pool idle timeout (pool ended by the sweeper), then claims new work', async () => {
		const queue = db.queueName('idle');
		const t = await claimTrigger(queue);
		const swept = poolCounters.sweptIdle;
		await waitFor(() => poolCounters.sweptIdle > swept && openPoolCount() === 0, { what: 'poolCounters.sweptIdle > swept && openPoolCount() === 0', timeoutMs: 8000 });
		expect(poolCounters.sweptIdle).toBeGreaterThan(swept);
		expect(openPoolCount()).toBe(0);
		// The trigger idles on (the long-lived part under test) while the sweeper runs again: twice a
		// marker pool of another credential is opened, left idle and swept, so two more idle timeouts
		// passed with the trigger's pool closed.
		for (let round = 1; round <= 2; round++) {
			const marker = getPool({ connectionString: QUEUE_DATABASE_URL, schema: db.schema, maxConnections: 2 });
			await marker.query('SELECT 1');
			const sweptBeforeMarker = poolCounters.sweptIdle;
			await waitFor(() => poolCounters.sweptIdle > sweptBeforeMarker && openPoolCount() === 0, { what: `marker pool ${round} swept as idle`, timeoutMs: 8000 });
		}
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { n: 1 } }]);
		await waitFor(() => t.emitted.length > 0, { what: 't.emitted.length > 0', timeoutMs: 8000 });
		expect(payloads(t)).toEqual([{ n: 1 }]);
		// And again after the next sweep.
		await waitFor(() => openPoolCount() === 0, { what: 'openPoolCount() === 0', timeoutMs: 8000 });
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low', payload: { n: 2 } }]);
		await waitFor(() => t.emitted.length > 1, { what: 't.emitted.length > 1', timeoutMs: 8000 });
		expect(payloads(t)).toEqual([{ n: 1 }, { n: 2 }]);
		expect(t.warnings.filter((w) => /after calling end/.test(w))).toEqual([]);
	});

	test('its LISTEN backend and pool connections killed (as by a Postgres restart): it reconnects and claims', async () => {
		const queue = db.queueName('killed');
		const t = await claimTrigger(queue);
		const listening = async () => {
			const { rows } = await db.pool.query(
				`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
				[`LISTEN ${queueChannel(db.ledgerSchema, queue)}`],
			);
			return rows[0].n > 0;
		};
		await waitFor(listening, { what: 'listening', timeoutMs: 8000 });
		expect(await listening()).toBe(true);
		const { rows } = await db.pool.query(
			`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
			  WHERE datname = current_database() AND application_name LIKE 'n8n-nodes-operation-ledger%'`,
		);
		expect(rows[0].n).toBeGreaterThanOrEqual(1);
		await waitFor(async () => !(await listening()), { what: '!(await listening())', timeoutMs: 3000 });
		// The watcher reconnects with backoff (first retry after 0.5 to 1 s).
		await waitFor(listening, { what: 'listening', timeoutMs: 10_000 });
		expect(await listening()).toBe(true);
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', payload: { n: 'after-restart' } }]);
		await waitFor(() => t.emitted.length > 0, { what: 't.emitted.length > 0', timeoutMs: 5000 });
		expect(payloads(t)).toEqual([{ n: 'after-restart' }]);
		expect(t.warnings.some((w) => /LISTEN connection lost/.test(w))).toBe(true);
	});

	test('its pool is evicted under the pool limit between and during executions; it keeps claiming', async () => {
		// One pool per process: every execution of the consumer (another credential) evicts the
		// trigger's pool, and the trigger's next claim evicts the consumer's.
		process.env.OPERATION_LEDGER_MAX_POOLS = '1';
		const queue = db.queueName('evict');
		const other = getPool({ connectionString: QUEUE_DATABASE_URL, schema: db.schema, maxConnections: 4 });
		// A third connection (another pool size, so another pool) that each execution uses while it holds a client.
		const third = getPool({ connectionString: QUEUE_DATABASE_URL, schema: db.schema, maxConnections: 5 });
		const evictedBefore = poolCounters.evicted;
		/** Per execution: pools evicted and ends deferred while its client was held. */
		const whileHeld: Array<{ evicted: number; deferredEnds: number }> = [];
		const t = await claimTrigger(queue, async (items) => {
			// Mid-run: a client is held inside a transaction while another pool is created; under the
			// limit of one that evicts the held client's pool, whose end must wait for the release.
			const client = await other.connect();
			try {
				await client.query('BEGIN');
				const [evicted, deferred] = [poolCounters.evicted, poolCounters.deferredEnds];
				await third.query('SELECT 1');
				whileHeld.push({ evicted: poolCounters.evicted - evicted, deferredEnds: poolCounters.deferredEnds - deferred });
				await client.query('SELECT 1');
				await client.query('COMMIT');
			} finally {
				client.release();
			}
			return completeAll(items);
		});
		for (let n = 1; n <= 5; n++) {
			await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', payload: { n } }]);
			await waitFor(() => t.emitted.length >= n, { what: 't.emitted.length >= n', timeoutMs: 8000 });
		}
		expect(payloads(t)).toEqual([1, 2, 3, 4, 5].map((n) => ({ n })));
		// An emit comes before its execution ran: wait for the fifth execution's hold to be over.
		await waitFor(() => whileHeld.length === 5, { what: 'five executions past their held client' });
		expect(whileHeld).toEqual(Array.from({ length: 5 }, () => ({ evicted: 1, deferredEnds: 1 })));
		expect(poolCounters.evicted - evictedBefore).toBeGreaterThanOrEqual(4);
		expect(t.warnings).toEqual([]);
	});
});
