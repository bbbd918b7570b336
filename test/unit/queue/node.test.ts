/**
 * The Priority Dequeue node layer: parameters → one database call → items out with pairedItem,
 * continueOnFail, and the exact SQL sent. The database is a scripted fake pool.
 */
import { NodeOperationError } from 'n8n-workflow';
import { fakeExecute, fakePool, type FakeOptions } from '../../helpers/fakeExecute';
import { ledgerSchema } from '../../../src/db/identifiers';

/** The Priority Dequeue node under test. */
const queueFakeExecute = (o: FakeOptions) => fakeExecute({ nodeName: 'Priority Dequeue', nodeType: 'n8n-nodes-operation-ledger.priorityDequeue', ...o });

const conn = { pool: undefined as unknown, config: { schema: 'ops' }, schema: ledgerSchema('ops') };
jest.mock('../../../nodes/shared/connection', () => ({
	CREDENTIAL_NAME: 'operationLedgerPostgresApi',
	ledgerConnectionTest: jest.fn(),
	getLedgerConnection: jest.fn(async () => conn),
}));

// Imported after the mock.
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';

const node = new PriorityDequeue();
const TOKEN = '6f1c1c9e-2d7e-4b8a-9a51-0c8f3f5a9b10';
const T0 = new Date('2026-01-02T03:04:05.000Z');

function run(fns: ReturnType<typeof queueFakeExecute>) {
	return node.execute.call(fns);
}

describe('Priority Dequeue node', () => {
	test('enqueue: all items in one call, items out in input order with pairedItem', async () => {
		const pool = fakePool([
			[
				{ idx: 1, id: '11', deduplicated: true, queue: 'jobs', priority_group: 'high', status: 'pending', payload: { b: 2 }, dedupe_key: 'k', run_at: T0, attempts: 0, max_attempts: 5, enqueued_at: T0, outcome: 'duplicate', window_ends_at: null },
				{ idx: 0, id: '10', deduplicated: false, queue: 'jobs', priority_group: 'low', status: 'pending', payload: { a: 1 }, dedupe_key: null, run_at: T0, attempts: 0, max_attempts: 3, enqueued_at: T0, outcome: 'enqueued', window_ends_at: null },
			],
		]);
		conn.pool = pool;
		const out = await run(
			queueFakeExecute({
				items: [{ json: { a: 1 } }, { json: { b: 2 } }],
				params: {
					operation: 'enqueue',
					queue: 'jobs',
					priorityGroup: (i: number) => (i === 0 ? 'low' : 'high'),
					payload: (i: number) => (i === 0 ? { a: 1 } : '{"b":2}'),
					dedupeKey: (i: number) => (i === 0 ? '' : 'k'),
					options: (i: number) => (i === 0 ? { maxAttempts: 3 } : { delaySeconds: 30 }),
				},
			}),
		);
		expect(pool.calls).toHaveLength(1);
		expect(pool.calls[0].text).toBe('SELECT * FROM "ops".queue_enqueue($1::jsonb)');
		expect(JSON.parse(pool.calls[0].values[0] as string)).toEqual([
			{ i: 0, q: 'jobs', g: 'low', p: { a: 1 }, m: 3 },
			{ i: 1, q: 'jobs', g: 'high', p: { b: 2 }, m: 5, k: 'k', d: 30 },
		]);
		expect(out).toEqual([
			[],
			[
				{
					json: {
						taskId: '10', deduplicated: false, outcome: 'enqueued', queue: 'jobs', group: 'low', status: 'pending', dedupeKey: null,
						availableAt: T0.toISOString(), attempts: 0, maxAttempts: 3, enqueuedAt: T0.toISOString(),
					},
					pairedItem: { item: 0 },
				},
				{
					json: {
						taskId: '11', deduplicated: true, outcome: 'duplicate', queue: 'jobs', group: 'high', status: 'pending', dedupeKey: 'k',
						availableAt: T0.toISOString(), attempts: 0, maxAttempts: 5, enqueuedAt: T0.toISOString(),
					},
					pairedItem: { item: 1 },
				},
			],
		]);
	});

	test('enqueue: an invalid item throws before anything is written (continueOnFail off)', async () => {
		const pool = fakePool([]);
		conn.pool = pool;
		const fns = queueFakeExecute({
			items: [{ json: {} }, { json: {} }],
			params: { operation: 'enqueue', queue: 'jobs', priorityGroup: (i: number) => (i === 1 ? '' : 'high'), payload: {}, dedupeKey: '', options: {} },
		});
		await expect(run(fns)).rejects.toThrow(NodeOperationError);
		await expect(run(fns)).rejects.toThrow(/Priority group must be a non-empty string/);
		expect(pool.calls).toHaveLength(0);
	});

	test('enqueue: with continueOnFail the bad item becomes an error item, the good ones are written', async () => {
		const pool = fakePool([
			[{ idx: 0, id: '5', deduplicated: false, queue: 'jobs', priority_group: 'high', status: 'pending', payload: {}, dedupe_key: null, run_at: T0, attempts: 0, max_attempts: 5, enqueued_at: T0 }],
		]);
		conn.pool = pool;
		const out = await run(
			queueFakeExecute({
				items: [{ json: {} }, { json: {} }],
				continueOnFail: true,
				params: { operation: 'enqueue', queue: 'jobs', priorityGroup: 'high', payload: (i: number) => (i === 1 ? '{not json' : {}), dedupeKey: '', options: {} },
			}),
		);
		expect(JSON.parse(pool.calls[0].values[0] as string)).toHaveLength(1);
		expect(out[1].map((it) => [it.json.taskId, it.pairedItem])).toEqual([['5', { item: 0 }]]);
		expect(out[0].map((it) => it.pairedItem)).toEqual([{ item: 1 }]);
		expect(out[0][0].json.error).toMatch(/The payload is not valid JSON/);
	});

	test('enqueue: a database failure fails every item under continueOnFail', async () => {
		conn.pool = fakePool([new Error('connection refused')]);
		const out = await run(
			queueFakeExecute({
				items: [{ json: {} }, { json: {} }],
				continueOnFail: true,
				params: { operation: 'enqueue', queue: 'jobs', priorityGroup: 'high', payload: {}, dedupeKey: '', options: {} },
			}),
		);
		expect(out[0]).toHaveLength(2);
		expect(out[0].every((it) => /nothing of this batch was recorded.*connection refused/.test(String(it.json.error)))).toBe(true);
		expect(out[0].map((it) => it.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		expect(out[1]).toEqual([]);
	});

	test('dequeue: one claim per execution with the parsed groups; tasks paired to item 0', async () => {
		const pool = fakePool([
			[
				{ claim_seq: '7', id: '42', queue: 'jobs', priority_group: 'low', served_as: 'high', payload: { x: 1 }, dedupe_key: null, attempts: 2, max_attempts: 5, lease_token: TOKEN, lease_expires_at: T0, run_at: T0, enqueued_at: T0, last_error: 'lease expired (attempt 1 of 5)', waited_secs: 12.5 },
			],
		]);
		conn.pool = pool;
		const out = await run(
			queueFakeExecute({
				items: [{ json: { reason: 'notify' } }, { json: {} }],
				params: {
					operation: 'dequeue',
					queue: 'jobs',
					batchSize: 25,
					leaseSeconds: 60,
					priorityGroups: { group: [{ name: 'vip', weight: 3 }, { name: 'std', weight: 1 }] },
					options: { agingSeconds: 120 },
				},
			}),
		);
		expect(pool.calls).toEqual([
			// No strict group: the seventh argument is null (the claim's fast path unchanged).
			{ text: 'SELECT * FROM "ops".queue_claim($1, $2::text[], $3::integer[], $4, $5, $6, $7::text[])', values: ['jobs', ['vip', 'std'], [3, 1], 25, 60, 120, null] },
		]);
		expect(out).toEqual([
			[],
			[
				{
					json: {
						claimSeq: '7', taskId: '42', queue: 'jobs', group: 'low', servedAs: 'high', payload: { x: 1 }, dedupeKey: null,
						attempt: 2, maxAttempts: 5, leaseToken: TOKEN, leaseExpiresAt: T0.toISOString(), availableAt: T0.toISOString(),
						enqueuedAt: T0.toISOString(), lastError: 'lease expired (attempt 1 of 5)', waitedSeconds: 12.5,
					},
					pairedItem: { item: 0 },
				},
			],
		]);
	});

	const badGroups = {
		operation: 'dequeue',
		queue: 'jobs',
		batchSize: 5,
		leaseSeconds: 60,
		priorityGroups: { group: [{ name: 'high', weight: 5 }, { name: 'high', weight: 1 }] },
		options: {},
	};
	const groupsError = { json: { error: 'Priority group "high" is listed twice', retryable: false }, pairedItem: { item: 0 } };

	test('dequeue, Continue (using error output): bad groups are an error item on Unrecorded (n8n moves it)', async () => {
		const pool = fakePool([]);
		conn.pool = pool;
		const out = await run(queueFakeExecute({ items: [{ json: {} }], continueOnFail: true, onError: 'continueErrorOutput', params: badGroups }));
		expect(pool.calls).toHaveLength(0);
		// n8n moves an item to the error output only when `error` is its only key: no `retryable` here.
		expect(out).toEqual([[{ ...groupsError, json: { error: groupsError.json.error } }], []]);
	});

	test('dequeue, Continue (regular output): the error item goes to Unrecorded (output 0), never to the claimed-tasks output', async () => {
		const pool = fakePool([]);
		conn.pool = pool;
		const out = await run(queueFakeExecute({ items: [{ json: {} }], continueOnFail: true, onError: 'continueRegularOutput', params: badGroups }));
		expect(pool.calls).toHaveLength(0);
		expect(out).toEqual([[groupsError], []]);
	});

	test('enqueue: error items on Unrecorded, results on output 1, each in input order', async () => {
		const pool = fakePool([
			[{ idx: 0, id: '11', deduplicated: false, queue: 'jobs', priority_group: 'low', status: 'pending', payload: {}, dedupe_key: null, run_at: T0, attempts: 0, max_attempts: 3, enqueued_at: T0 }],
		]);
		conn.pool = pool;
		const out = await run(
			queueFakeExecute({
				items: [{ json: {} }, { json: {} }],
				continueOnFail: true,
				params: { operation: 'enqueue', queue: 'jobs', priorityGroup: 'low', payload: (i: number) => (i === 0 ? '{bad' : '{}'), dedupeKey: '', options: {} },
			}),
		);
		expect(out).toHaveLength(2);
		expect(out[0]).toEqual([{ json: { error: expect.stringMatching(/The payload is not valid JSON/), retryable: false }, pairedItem: { item: 0 } }]);
		expect(out[1].map((it) => it.json.taskId)).toEqual(['11']);
	});

	test('complete: task id and lease token come from the upstream dequeue item through lineage; lease lost says so', async () => {
		const pool = fakePool([
			[
				{ idx: 0, id: '42', outcome: 'completed', status: 'succeeded', attempts: 1, finished_at: T0, detail: null },
				{ idx: 1, id: '43', outcome: 'lease_lost', status: 'processing', attempts: 2, finished_at: null, detail: 'the lease was lost: the task is held by another holder now' },
			],
		]);
		conn.pool = pool;
		const upstream = [
			{ json: { taskId: '42', leaseToken: TOKEN } },
			{ json: { taskId: '43', leaseToken: TOKEN.replace('6f', '7f') } },
		];
		const out = await run(
			queueFakeExecute({
				// Execute Workflow replaced the json: the ids come from "Dequeue Tasks" via pairedItem.
				items: [{ json: { ok: true } }, { json: { ok: true } }],
				params: { operation: 'complete', taskSource: 'lineage', options: {} },
				parents: [{ name: 'Dequeue Tasks', type: 'n8n-nodes-operation-ledger.priorityDequeue' }],
				pairedFrom: { 'Dequeue Tasks': (i) => upstream[i] },
			}),
		);
		expect(pool.calls[0].text).toBe('SELECT * FROM "ops".queue_complete($1::jsonb)');
		expect(out[0]).toEqual([]);
		expect(JSON.parse(pool.calls[0].values[0] as string)).toEqual([
			{ i: 0, id: '42', tok: TOKEN, res: null },
			{ i: 1, id: '43', tok: TOKEN.replace('6f', '7f'), res: null },
		]);
		expect(out[1]).toEqual([
			{ json: { taskId: '42', outcome: 'completed', leaseLost: false, status: 'succeeded', detail: null, attempts: 1, finishedAt: T0.toISOString() }, pairedItem: { item: 0 } },
			{
				json: {
					taskId: '43', outcome: 'lease_lost', leaseLost: true, status: 'processing',
					detail: 'the lease was lost: the task is held by another holder now', attempts: 2, finishedAt: null,
				},
				pairedItem: { item: 1 },
			},
		]);
	});

	test('fail: explicit ids, backoff from the options, give up; a malformed token fails only its item', async () => {
		const pool = fakePool([
			[{ idx: 0, id: '42', outcome: 'dead', status: 'dead', attempts: 1, max_attempts: 5, retry_at: null, last_error: 'bad input', detail: 'gave up: no retry' }],
		]);
		conn.pool = pool;
		const out = await run(
			queueFakeExecute({
				items: [{ json: { id: 42, tok: TOKEN } }, { json: { id: 43, tok: 'not-a-uuid' } }],
				continueOnFail: true,
				params: {
					operation: 'fail',
					taskSource: 'explicit',
					taskId: (i: number) => String(42 + i),
					leaseToken: (i: number) => (i === 0 ? TOKEN : 'not-a-uuid'),
					errorMessage: 'bad input',
					options: { giveUp: true, backoffBaseSeconds: 2, backoffCapSeconds: 60 },
				},
			}),
		);
		expect(pool.calls[0]).toEqual({
			text: 'SELECT * FROM "ops".queue_fail($1::jsonb, $2, $3)',
			values: [JSON.stringify([{ i: 0, id: '42', tok: TOKEN, err: 'bad input', giveUp: true }]), 2, 60],
		});
		expect(out[1]).toHaveLength(1);
		expect(out[1][0]).toEqual({
			json: { taskId: '42', outcome: 'dead', leaseLost: false, status: 'dead', detail: 'gave up: no retry', attempts: 1, maxAttempts: 5, retryAt: null, lastError: 'bad input' },
			pairedItem: { item: 0 },
		});
		expect(out[0]).toEqual([{ json: { error: expect.stringMatching(/Lease token must be the UUID/), retryable: false }, pairedItem: { item: 1 } }]);
	});

	test('settle without a dequeue upstream and without ids throws with the item index', async () => {
		conn.pool = fakePool([]);
		const fns = queueFakeExecute({ items: [{ json: {} }], params: { operation: 'extendLease', taskSource: 'lineage', leaseSeconds: 60 } });
		await expect(run(fns)).rejects.toMatchObject({ message: expect.stringMatching(/no Priority Dequeue node is upstream/), context: { itemIndex: 0 } });
	});

	test('release and extend lease send their seconds', async () => {
		const pool = fakePool([
			[{ idx: 0, id: '42', outcome: 'released', status: 'pending', attempts: 0, run_at: T0, detail: null }],
			[{ idx: 0, id: '42', outcome: 'extended', status: 'processing', lease_expires_at: T0, detail: null }],
		]);
		conn.pool = pool;
		const item = { json: { taskId: '42', leaseToken: TOKEN } };
		const rel = await run(queueFakeExecute({ items: [item], params: { operation: 'release', options: { delaySeconds: 30, countAttempt: true } } }));
		const ext = await run(queueFakeExecute({ items: [item], params: { operation: 'extendLease', leaseSeconds: 90 } }));
		expect(JSON.parse(pool.calls[0].values[0] as string)).toEqual([{ i: 0, id: '42', tok: TOKEN, delay: 30, count: true }]);
		expect(JSON.parse(pool.calls[1].values[0] as string)).toEqual([{ i: 0, id: '42', tok: TOKEN, secs: 90 }]);
		expect(rel[1][0].json).toMatchObject({ outcome: 'released', availableAt: T0.toISOString() });
		expect(ext[1][0].json).toMatchObject({ outcome: 'extended', leaseExpiresAt: T0.toISOString() });
	});

	test('stats: one item per input item, dead tasks listed on request', async () => {
		const pool = fakePool([
			[
				{ priority_group: 'high', ready: '3', delayed: '1', in_flight: '2', expired_leases: '0', dead: '1', oldest_ready_at: T0, oldest_wait_secs: 40, succeeded_last_hour: '9', measured_at: T0 },
				{ priority_group: 'low', ready: '5', delayed: '0', in_flight: '0', expired_leases: '1', dead: '0', oldest_ready_at: T0, oldest_wait_secs: 90, succeeded_last_hour: '0', measured_at: T0 },
			],
			[
				{
					groups_oldest_pending: { high: 120, low: 30 },
					live_tuples: '100',
					dead_tuples: '2500',
					last_vacuum: null,
					last_autovacuum: T0,
					vacuum_count: '0',
					autovacuum_count: '3',
					autovacuum_on: true,
					xmin_age_xids: 4000,
					xmin_xact_secs: 95.5,
					xmin_pid: 4242,
					xmin_state: 'idle in transaction',
					slot_xmin_age: null,
					prepared_xacts: '0',
				},
			],
			[{ id: '9', queue: 'jobs', priority_group: 'high', payload: {}, dedupe_key: null, attempts: 5, max_attempts: 5, last_error: 'boom', dead_reason: 'max_attempts_reached', requeues: 0, enqueued_at: T0, dead_at: T0 }],
		]);
		conn.pool = pool;
		const out = await run(queueFakeExecute({ items: [{ json: {} }], params: { operation: 'stats', queue: 'jobs', options: { deadTasks: 5 } } }));
		expect(pool.calls.map((c) => c.text)).toEqual([
			'SELECT s.*, now() AS measured_at FROM "ops".queue_stats($1) s',
			'SELECT * FROM "ops".queue_health($1)',
			'SELECT * FROM "ops".queue_list_dead($1, $2)',
		]);
		expect(out[1][0].json).toMatchObject({
			oldestPendingSeconds: 120,
			table: { deadTuples: 2500, autovacuumOn: true, oldestXmin: { ageXids: 4000, transactionSeconds: 95.5, pid: 4242, state: 'idle in transaction' } },
		});
		expect((out[1][0].json.deadTasks as Array<{ deadReason: string }>)[0].deadReason).toBe('max_attempts_reached');
		expect(out[1][0].json).toMatchObject({ depth: 9, ready: 8, inFlight: 2, dead: 1, expiredLeases: 1, oldestWaitSeconds: 90, succeededLastHour: 9 });
		expect((out[1][0].json.deadTasks as Array<{ lastError: string }>)[0].lastError).toBe('boom');
		expect(out[1][0].pairedItem).toEqual({ item: 0 });
	});

	test('requeue dead by id: one call, outcomes paired back to the items', async () => {
		const pool = fakePool([
			[
				{ id: '7', outcome: 'requeued', queue: 'jobs', priority_group: 'low', status: 'pending', last_error: 'x', requeues: 1 },
				{ id: '8', outcome: 'not_dead', queue: 'jobs', priority_group: 'low', status: 'pending', last_error: null, requeues: 0 },
			],
		]);
		conn.pool = pool;
		const out = await run(
			queueFakeExecute({
				items: [{ json: { taskId: '8' } }, { json: { taskId: '7' } }],
				params: { operation: 'requeueDead', queue: 'jobs', requeueScope: 'byId', taskId: (i: number) => (i === 0 ? '8' : '7') },
			}),
		);
		expect(pool.calls[0].values).toEqual(['jobs', ['8', '7'], null, 100]);
		expect(out[1].map((it) => [it.json.taskId, it.json.outcome, it.pairedItem])).toEqual([
			['8', 'not_dead', { item: 0 }],
			['7', 'requeued', { item: 1 }],
		]);
	});

	test('purge: days become seconds; -1 keeps', async () => {
		const pool = fakePool([[{ dead_archived: 2, archive_deleted: 0 }]]);
		conn.pool = pool;
		const out = await run(queueFakeExecute({ items: [{ json: {} }], params: { operation: 'purge', queue: '', deadRetentionDays: 2, archiveRetentionDays: -1 } }));
		expect(pool.calls[0].values).toEqual([null, 172800, null, 10000]);
		expect(out[1][0].json).toEqual({ queue: null, deadArchived: 2, archiveDeleted: 0 });
	});

	test('the description lists every operation once and has the credential', () => {
		const ops = node.description.properties.filter((p) => p.name === 'operation').flatMap((p) => (p.options ?? []).map((o) => (o as { value: string }).value));
		expect(ops.sort()).toEqual(['cancel', 'complete', 'dequeue', 'enqueue', 'extendLease', 'fail', 'nextDue', 'pause', 'purge', 'release', 'requeueDead', 'resume', 'settleById', 'stats']);
		expect(node.description.credentials).toEqual([{ name: 'operationLedgerPostgresApi', required: true, testedBy: 'ledgerConnectionTest' }]);
	});
});
