/**
 * Serial keys: tasks of a queue that share a serial key run one at a time, in enqueue
 * order, while other keys and tasks without a key run in parallel. A task behind a live one of its
 * key is stored blocked (serial_wait) and no claim sees it; when the key's head leaves queue_tasks
 * (completed, cancelled, settled complete by id, purged) the oldest blocked task of the key becomes
 * the head in the same transaction and its queue is notified. A dead head holds its key. Checked
 * against a real Postgres: order per key, 4 concurrent consumers over many keys (no two tasks of a
 * key processing at once, judged by the database's claim and finish times), cancel and settle by id
 * beside the head's complete (no deadlock), the dead head, the LISTEN wake-up, fairness of the
 * tasks without a key, and the Enqueue node's Serial Key option.
 */
import type { IDataObject } from 'n8n-workflow';
import { Client } from 'pg';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { cancel, complete, dequeue, enqueue, fail, prepareEnqueueInput, purge, queueChannel, requeueDeadByIds, settleById, type ClaimedTask, type EnqueueInput, type GroupWeight } from '../../../src/queue';
import { InputError } from '../../../src/errors';
import { closeAllPools } from '../../../src/db/pool';
import { TEXT_LIMITS } from '../../../src/limits';
import { advanceQueueClock, DATABASE_URL, queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';
import { waitFor } from '../../helpers/wait';

jest.setTimeout(120_000);

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(14);
});
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const claim = (queue: string, limit = 10, leaseSeconds = 60, groups?: GroupWeight[]) => dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds, agingSeconds: 0, ...(groups ? { groups } : {}) });
const ids = (tasks: ClaimedTask[]) => tasks.map((t) => t.taskId);
const put = async (queue: string, items: Array<Partial<EnqueueInput>>) =>
	(await enqueue(db.pool, db.ledgerSchema, items.map((it, n) => ({ queue, group: 'normal', payload: { n }, ...it })))).map((t) => t.taskId);
const done = (tasks: ClaimedTask[]) => complete(db.pool, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
const rowsOf = async (queue: string) =>
	(await db.pool.query(`SELECT t.id::text AS id, t.status, t.serial_key, t.serial_wait, t.vtag FROM "${db.schema}".queue_tasks t WHERE t.queue = $1 ORDER BY t.id`, [queue])).rows as Array<{ id: string; status: string; serial_key: string | null; serial_wait: boolean; vtag: number | null }>;
const blocked = async (queue: string) => (await rowsOf(queue)).filter((r) => r.serial_wait).map((r) => r.id);

describe('one at a time per key, in enqueue order', () => {
	test('a key runs its tasks one after the other in enqueue order; other keys and tasks without a key run beside it', async () => {
		const queue = db.queueName('s-order');
		const [a1, a2, b1, free, a3, b2] = await put(queue, [{ serialKey: 'A' }, { serialKey: 'A' }, { serialKey: 'B' }, {}, { serialKey: 'A' }, { serialKey: 'B' }]);
		expect(await blocked(queue)).toEqual([a2, a3, b2]);
		// Blocked tasks are untagged (the claim's tag index never sees them).
		expect((await rowsOf(queue)).filter((r) => r.serial_wait).every((r) => r.vtag === null)).toBe(true);
		const first = await claim(queue, 10);
		expect(ids(first).sort()).toEqual([a1, b1, free].sort());
		expect(await claim(queue, 10)).toEqual([]);
		// B's head completes: b2 is next; A is still held by a1.
		await done(first.filter((t) => t.taskId === b1));
		expect(ids(await claim(queue, 10))).toEqual([b2]);
		await done(first.filter((t) => t.taskId === a1));
		const second = await claim(queue, 10);
		expect(ids(second)).toEqual([a2]);
		await done(second);
		expect(ids(await claim(queue, 10))).toEqual([a3]);
		expect(await blocked(queue)).toEqual([]);
	});

	test('a retry keeps the head: a failed or released head runs again before the next task of its key; an expired lease too', async () => {
		const queue = db.queueName('s-retry');
		const [h, n] = await put(queue, [{ serialKey: 'K', maxAttempts: 3 }, { serialKey: 'K' }]);
		const [c1] = await claim(queue);
		expect(c1.taskId).toBe(h);
		const [f] = await fail(db.pool, db.ledgerSchema, [{ taskId: h, leaseToken: c1.leaseToken, error: 'boom' }], { baseSeconds: 0, capSeconds: 0 });
		expect(f.outcome).toBe('retry_scheduled');
		const [c2] = await claim(queue);
		expect(c2.taskId).toBe(h);
		expect(await blocked(queue)).toEqual([n]);
		// Its lease expires: the head is claimed again, n still waits.
		await advanceQueueClock(db.pool, db.schema, 61);
		const again = await claim(queue);
		expect(ids(again)).toEqual([h]);
		expect(await blocked(queue)).toEqual([n]);
		await done(again);
		expect(ids(await claim(queue))).toEqual([n]);
	});

	test('a delayed task behind its key becomes the head and is claimed when due; a delayed head holds its key', async () => {
		const queue = db.queueName('s-delay');
		const [h, n] = await put(queue, [{ serialKey: 'D', delaySeconds: 30 }, { serialKey: 'D' }]);
		expect(await claim(queue)).toEqual([]);
		await advanceQueueClock(db.pool, db.schema, 31);
		const got = await claim(queue);
		expect(ids(got)).toEqual([h]);
		await done(got);
		expect(ids(await claim(queue))).toEqual([n]);
	});

	test('with a dedupe key: a duplicate changes nothing, the keyed task queues behind its serial key', async () => {
		const queue = db.queueName('s-dedupe');
		const [h] = await put(queue, [{ serialKey: 'S' }]);
		const out = await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'normal', payload: { x: 1 }, serialKey: 'S', dedupeKey: 'd1' },
			{ queue, group: 'normal', payload: { x: 2 }, serialKey: 'S', dedupeKey: 'd1' },
		]);
		expect(out.map((o) => o.outcome)).toEqual(['enqueued', 'duplicate']);
		expect(out[1].taskId).toBe(out[0].taskId);
		expect(await blocked(queue)).toEqual([out[0].taskId]);
		const got = await claim(queue);
		expect(ids(got)).toEqual([h]);
		await done(got);
		expect(ids(await claim(queue))).toEqual([out[0].taskId]);
	});

	test('the serial key is checked like a dedupe key: a refused one is an item error in TypeScript and 22023 in SQL, nothing written', async () => {
		const queue = db.queueName('s-bad');
		expect(() => prepareEnqueueInput({ queue, group: 'normal', serialKey: 'a\nb' })).toThrow(InputError);
		expect(() => prepareEnqueueInput({ queue, group: 'normal', serialKey: 'x'.repeat(TEXT_LIMITS.maxSerialKeyBytes + 1) })).toThrow(InputError);
		expect(prepareEnqueueInput({ queue, group: 'normal', serialKey: 'x'.repeat(TEXT_LIMITS.maxSerialKeyBytes) }).serialKey).toHaveLength(TEXT_LIMITS.maxSerialKeyBytes);
		await expect(db.pool.query(`SELECT * FROM "${db.schema}".queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: queue, g: 'normal', p: {}, s: 'x'.repeat(513) }])])).rejects.toMatchObject({ code: '22023' });
		expect(await rowsOf(queue)).toEqual([]);
	});
});

describe('4 concurrent consumers over many keys', () => {
	test('never two tasks of a key processing at once (database claim and finish times), each key in enqueue order, keys in parallel', async () => {
		const queue = db.queueName('s-conc');
		const KEYS = 12;
		const PER_KEY = 8;
		// Interleaved enqueues: one task per key per batch, plus tasks without a key.
		const keyOf = new Map<string, string>();
		const orderOf = new Map<string, number>();
		for (let n = 0; n < PER_KEY; n++) {
			const items: Array<Partial<EnqueueInput>> = [];
			for (let k = 0; k < KEYS; k++) items.push({ serialKey: `cust-${k}`, payload: { k, n } });
			items.push({ payload: { free: n } }, { payload: { free: n, b: 1 } });
			const got = await put(queue, items);
			got.slice(0, KEYS).forEach((id, k) => {
				keyOf.set(id, `cust-${k}`);
				orderOf.set(id, n);
			});
		}
		const total = KEYS * PER_KEY + 2 * PER_KEY;
		const running = new Set<string>();
		const seenPerKey = new Map<string, number[]>();
		const claimedAt = new Map<string, number>();
		const claimTook = new Map<string, number>();
		let maxSerialAtOnce = 0;
		let finished = 0;
		let violations = 0;
		const consumer = async () => {
			while (finished < total) {
				const started = Date.now();
				const got = await claim(queue, 2, 60);
				const took = Date.now() - started;
				if (got.length === 0) {
					await new Promise((r) => setImmediate(r)); // an empty claim yields and tries again
					continue;
				}
				for (const t of got) {
					const key = keyOf.get(t.taskId);
					// The claim's time on the database clock: the lease started then.
					claimedAt.set(t.taskId, Date.parse(t.leaseExpiresAt) - 60_000);
					claimTook.set(t.taskId, took);
					if (!key) continue;
					if (running.has(key)) violations++;
					running.add(key);
					const seen = seenPerKey.get(key) ?? [];
					seen.push(orderOf.get(t.taskId) as number);
					seenPerKey.set(key, seen);
				}
				maxSerialAtOnce = Math.max(maxSerialAtOnce, running.size);
				// Let the others claim while these are held.
				await new Promise((r) => setImmediate(r));
				// Out of the running set before the complete commits: a claim of the next task of the key
				// can only come after that commit.
				for (const t of got) running.delete(keyOf.get(t.taskId) ?? '');
				const res = await done(got);
				expect(res.map((r) => r.outcome)).toEqual(got.map(() => 'completed'));
				finished += got.length;
			}
		};
		await Promise.all(Array.from({ length: 4 }, consumer));
		expect(finished).toBe(total);
		expect(violations).toBe(0);
		expect(maxSerialAtOnce).toBeGreaterThan(1); // keys ran in parallel
		for (let k = 0; k < KEYS; k++) expect(seenPerKey.get(`cust-${k}`)).toEqual([...Array(PER_KEY).keys()]);
		// The database's own times: per key, no task was claimed before the one ahead of it finished.
		// Overlap-aware: a claim reads its time (the lease start) when it begins and may lock the
		// promoted row later in the same call, so its time may precede the finish by at most the
		// claim's own duration (measured around the call); anything earlier is an overlap.
		const { rows } = await db.pool.query(`SELECT a.id::text AS id, a.serial_key, a.finished_at FROM "${db.schema}".queue_tasks_archive a WHERE a.queue = $1 AND a.serial_key IS NOT NULL ORDER BY a.serial_key, a.id`, [queue]);
		expect(rows).toHaveLength(KEYS * PER_KEY);
		let checked = 0;
		for (let i = 1; i < rows.length; i++) {
			if (rows[i].serial_key !== rows[i - 1].serial_key) continue;
			const claimEnd = (claimedAt.get(rows[i].id) as number) + (claimTook.get(rows[i].id) as number) + 1;
			expect(claimEnd).toBeGreaterThanOrEqual((rows[i - 1].finished_at as Date).getTime());
			checked++;
		}
		expect(checked).toBe(KEYS * (PER_KEY - 1));
	});
});

describe('operators beside the head', () => {
	test('cancel of a blocked task: it leaves the line, the rest keep their order; cancel of a waiting head: the next is promoted', async () => {
		const queue = db.queueName('s-cancel');
		const [h, b1, b2, b3] = await put(queue, [{ serialKey: 'C' }, { serialKey: 'C' }, { serialKey: 'C' }, { serialKey: 'C' }]);
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: b1, reason: 'duplicate order' }]))[0].outcome).toBe('cancelled');
		expect(await blocked(queue)).toEqual([b2, b3]);
		// The head is still waiting (never claimed): cancelled, b2 becomes the head.
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: h }]))[0].outcome).toBe('cancelled');
		expect(await blocked(queue)).toEqual([b3]);
		const got = await claim(queue);
		expect(ids(got)).toEqual([b2]);
		// A processing head: cancel requested, the key is held until its holder's settle ends it.
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: b2 }]))[0].outcome).toBe('cancel_requested');
		expect(await claim(queue)).toEqual([]);
		expect((await done(got))[0].outcome).toBe('cancelled');
		expect(ids(await claim(queue))).toEqual([b3]);
	});

	test('a cancel-requested head whose lease expires ends cancelled at the sweep and hands the key on', async () => {
		const queue = db.queueName('s-cancel-exp');
		const [h, n] = await put(queue, [{ serialKey: 'E' }, { serialKey: 'E' }]);
		const [c] = await claim(queue);
		expect(c.taskId).toBe(h);
		expect((await cancel(db.pool, db.ledgerSchema, [{ queue, taskId: h }]))[0].outcome).toBe('cancel_requested');
		await advanceQueueClock(db.pool, db.schema, 61);
		expect(ids(await claim(queue))).toEqual([n]);
		expect((await db.pool.query(`SELECT status FROM "${db.schema}".queue_tasks_archive WHERE id = $1`, [h])).rows[0].status).toBe('cancelled');
	});

	test('settle by id and cancel of blocked tasks racing the head\'s complete, 40 rounds: no deadlock, every wait bounded, one head at a time', async () => {
		const bounds = { statementTimeoutMs: 5000, lockTimeoutMs: 3000 };
		// Straight to the SQL functions, each in its own bounded transaction, without the client's
		// retry of a deadlock victim (src/db/bounds.ts retries 40P01): a deadlock fails the test.
		const once = async (fnName: string, items: unknown[]) => {
			const c = await db.pool.connect();
			try {
				await c.query(`BEGIN; SET LOCAL lock_timeout = 3000; SET LOCAL statement_timeout = 5000`);
				const { rows } = await c.query(`SELECT * FROM "${db.schema}".${fnName}($1::jsonb) ORDER BY idx`, [JSON.stringify(items)]);
				await c.query('COMMIT');
				return rows as Array<{ outcome: string }>;
			} catch (e) {
				await c.query('ROLLBACK').catch(() => undefined);
				throw e;
			} finally {
				c.release();
			}
		};
		for (let round = 0; round < 40; round++) {
			const queue = db.queueName('s-race');
			const [h, b1, b2, b3] = await put(queue, [{ serialKey: 'R' }, { serialKey: 'R' }, { serialKey: 'R' }, { serialKey: 'R' }]);
			const [c] = await claim(queue);
			expect(c.taskId).toBe(h);
			// Both orders of the operator's batch items against the head's complete.
			const ops = round % 2 === 0 ? [b2, b1] : [b1, b2];
			const [res, byId, cancelled] = await Promise.all([
				once('queue_complete', [{ i: 0, id: h, tok: c.leaseToken }]),
				once('queue_settle_by_id', ops.map((id, i) => ({ i, queue, id, act: 'complete' }))),
				once('queue_cancel', [
					{ i: 0, queue, id: b3 },
					{ i: 1, queue, id: h },
				]),
			]);
			expect(res[0].outcome === 'completed' || res[0].outcome === 'cancelled').toBe(true);
			expect(byId.map((r) => r.outcome)).toEqual(['completed', 'completed']);
			expect(cancelled[0].outcome).toBe('cancelled');
			// Everything ended: nothing left blocked or claimable.
			expect(await rowsOf(queue)).toEqual([]);
		}
		// And a settle by id of the processing head beside an enqueue of its key, 20 rounds: the new
		// task is promoted exactly once (the key lock orders enqueue against the head leaving).
		for (let round = 0; round < 20; round++) {
			const queue = db.queueName('s-race2');
			await put(queue, [{ serialKey: 'R' }]);
			const [c] = await claim(queue);
			const [, added] = await Promise.all([
				settleById(db.pool, db.ledgerSchema, [{ queue, taskId: c.taskId, action: 'complete' }], bounds),
				enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', payload: {}, serialKey: 'R' }], {}, bounds),
			]);
			const rows = await rowsOf(queue);
			expect(rows).toEqual([expect.objectContaining({ id: added[0].taskId, serial_wait: false })]);
			expect(ids(await claim(queue))).toEqual([added[0].taskId]);
		}
	});
});

describe('a dead head holds its key', () => {
	test('the next task waits while the head is dead; Requeue Dead runs the head again, Settle by ID complete or Purge hands the key on', async () => {
		const queue = db.queueName('s-dead');
		const [h, n1, n2] = await put(queue, [{ serialKey: 'X', maxAttempts: 1 }, { serialKey: 'X' }, { serialKey: 'X' }]);
		const [c] = await claim(queue);
		const [f] = await fail(db.pool, db.ledgerSchema, [{ taskId: h, leaseToken: c.leaseToken, error: 'card declined' }]);
		expect(f.outcome).toBe('dead');
		expect(await claim(queue)).toEqual([]);
		expect(await blocked(queue)).toEqual([n1, n2]);
		// Requeue Dead: the head runs again, still first.
		expect((await requeueDeadByIds(db.pool, db.ledgerSchema, [{ queue, taskId: h }]))[0].outcome).toBe('requeued');
		const [again] = await claim(queue);
		expect(again.taskId).toBe(h);
		await fail(db.pool, db.ledgerSchema, [{ taskId: h, leaseToken: again.leaseToken, error: 'still declined' }]);
		// Settle by ID complete of the dead head: n1 is next.
		expect((await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: h, action: 'complete', reason: 'paid by phone' }]))[0].outcome).toBe('completed');
		const [c1] = await claim(queue);
		expect(c1.taskId).toBe(n1);
		await fail(db.pool, db.ledgerSchema, [{ taskId: n1, leaseToken: c1.leaseToken, error: 'x', giveUp: true }]);
		expect(await claim(queue)).toEqual([]);
		// Purge of the dead head after the dead retention: n2 is next.
		await advanceQueueClock(db.pool, db.schema, 120);
		expect((await purge(db.pool, db.ledgerSchema, { queue, deadAfterSeconds: 60 })).deadArchived).toBe(1);
		expect(ids(await claim(queue))).toEqual([n2]);
	});

	test('a blocked task failed by id is dead and keeps its place: it becomes a dead head in turn', async () => {
		const queue = db.queueName('s-dead-blocked');
		const [h, b, n] = await put(queue, [{ serialKey: 'Y' }, { serialKey: 'Y' }, { serialKey: 'Y' }]);
		expect((await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: b, action: 'fail', reason: 'bad' }]))[0].outcome).toBe('dead');
		const got = await claim(queue);
		expect(ids(got)).toEqual([h]);
		await done(got);
		expect(await claim(queue)).toEqual([]);
		expect((await rowsOf(queue)).map((r) => [r.id, r.status, r.serial_wait])).toEqual([
			[b, 'dead', false],
			[n, 'pending', true],
		]);
		await settleById(db.pool, db.ledgerSchema, [{ queue, taskId: b, action: 'complete' }]);
		expect(ids(await claim(queue))).toEqual([n]);
	});
});

describe('wake-up and fairness', () => {
	test('the promotion notifies the queue\'s channel (a LISTEN waiter wakes), the blocked enqueue does not', async () => {
		const queue = db.queueName('s-notify');
		const [h] = await put(queue, [{ serialKey: 'N' }]);
		const [c] = await claim(queue);
		const listener = new Client({ connectionString: DATABASE_URL });
		await listener.connect();
		try {
			const got: Array<{ payload?: string }> = [];
			listener.on('notification', (m) => got.push({ payload: m.payload }));
			await listener.query(`LISTEN "${queueChannel(db.ledgerSchema, queue)}"`);
			await put(queue, [{ serialKey: 'N' }]);
			// A marker after the blocked enqueue: everything it sent has arrived by the marker.
			await db.pool.query('SELECT pg_notify($1, $2)', [queueChannel(db.ledgerSchema, queue), 'marker-1']);
			await waitFor(() => got.some((n) => n.payload === 'marker-1'), { what: 'the first marker' });
			expect(got.map((n) => n.payload)).toEqual(['marker-1']);
			expect(c.taskId).toBe(h);
			await done([c]);
			await waitFor(() => got.some((n) => n.payload === queue), { what: 'the promotion notification' });
			expect((await db.pool.query(`SELECT * FROM "${db.schema}".queue_wake_state($1, NULL)`, [queue])).rows[0].due_at).not.toBeNull();
		} finally {
			await listener.end();
		}
	});

	test('the trigger\'s due check and next due leave blocked tasks out', async () => {
		const queue = db.queueName('s-due');
		await put(queue, [{ serialKey: 'T' }, { serialKey: 'T', delaySeconds: 0 }]);
		const [c] = await claim(queue);
		expect(c).toBeDefined();
		// Only the processing head's lease is due; no pending task is.
		const next = (await db.pool.query(`SELECT "${db.schema}".queue_next_due($1) AS d`, [queue])).rows[0].d as Date;
		expect(next.getTime()).toBe(Date.parse(c.leaseExpiresAt));
		const wake = (await db.pool.query(`SELECT * FROM "${db.schema}".queue_wake_state($1, ARRAY['normal'])`, [queue])).rows[0];
		expect((wake.due_at as Date).getTime()).toBe(Date.parse(c.leaseExpiresAt));
		expect(Number(wake.claims)).toBe(0);
	});

	test('tasks without a key are claimed in the same order whether or not a blocked backlog waits beside them (weights 3:1, aging on)', async () => {
		const groups = [
			{ name: 'high', weight: 3 },
			{ name: 'low', weight: 1 },
		];
		const order: string[][] = [];
		for (const withSerial of [false, true]) {
			const queue = db.queueName('s-fair');
			await claim(queue, 1, 60, groups); // records the weights
			if (withSerial) {
				await put(queue, Array.from({ length: 40 }, () => ({ group: 'low', serialKey: 'big-customer' })));
				const [head] = await claim(queue, 1, 600, groups);
				expect(head).toBeDefined();
			}
			for (let i = 0; i < 12; i++) await put(queue, [{ group: 'high', payload: { g: 'h', i } }, { group: 'low', payload: { g: 'l', i } }]);
			// Old enough for the aging sweep: the blocked backlog must not stall it either.
			await advanceQueueClock(db.pool, db.schema, 30);
			const seq: string[] = [];
			for (;;) {
				const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 20, groups });
				if (got.length === 0) break;
				const p = got[0].payload as { g: string; i: number };
				seq.push(`${p.g}${p.i}`);
				await done(got);
			}
			order.push(seq);
			expect(seq).toHaveLength(24);
			if (withSerial) expect((await blocked(queue)).length).toBe(39);
		}
		expect(order[1]).toEqual(order[0]);
	});
});

describe('the Enqueue node\'s Serial Key option', () => {
	test('items with a serial key queue one behind the other; a refused key is an item error and nothing is written for it', async () => {
		const queue = db.queueName('s-node');
		const node = new PriorityDequeue();
		const items = [{ json: { c: 'acme' } }, { json: { c: 'acme' } }, { json: { c: 'bad\nkey' } }];
		const ctx = fakeExecute({
			credentials: testCredentials(DATABASE_URL, db.schema),
			params: {
				resource: 'task',
				operation: 'enqueue',
				queue,
				priorityGroup: 'normal',
				payload: (i: number) => items[i].json,
				dedupeKey: '',
				options: (i: number) => ({ serialKey: items[i].json.c }),
			},
			items,
			continueOnFail: true,
		});
		// Outputs: Unrecorded (the refused item, first), Result (what the database decided).
		const [unrecorded, result] = await node.execute.call(ctx);
		expect(unrecorded.map((o) => [o.pairedItem, /Serial key/.test(String((o.json as IDataObject).error))])).toEqual([[{ item: 2 }, true]]);
		expect(result.map((o) => [(o.json as IDataObject).outcome, o.pairedItem])).toEqual([
			['enqueued', { item: 0 }],
			['enqueued', { item: 1 }],
		]);
		const rows = await rowsOf(queue);
		expect(rows.map((r) => [r.serial_key, r.serial_wait])).toEqual([
			['acme', false],
			['acme', true],
		]);
	});
});
