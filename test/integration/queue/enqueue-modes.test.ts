/**
 * Enqueue's dedupe-key modes: On Duplicate Key (keep first, replace the
 * payload, replace payload and run time), throttle and debounce, against Postgres. Time moves by the
 * queue clock (queue_now), never by sleeping. Raced: replacers against claimers, where a claimed
 * task's payload is always one that was enqueued or replaced for its key and a task being worked on
 * is never changed.
 */
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { complete, dequeue, enqueue, prepareEnqueueInput, queueChannel, type ClaimedTask, type EnqueuedTask, type EnqueueInput } from '../../../src/queue';
import { InputError } from '../../../src/errors';
import { closeAllPools } from '../../../src/db/pool';
import { advanceQueueClock, DATABASE_URL, drainNotifications, queueTestDb, setQueueClock, type QueueTestDb } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const live = async (id: string) => (await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE id = $1`, [id])).rows[0];
const claim = (queue: string, limit = 10, leaseSeconds = 120) => dequeue(db.pool, db.ledgerSchema, { queue, limit, leaseSeconds });
const put = (items: EnqueueInput[]) => enqueue(db.pool, db.ledgerSchema, items);
const one = async (item: EnqueueInput) => (await put([item]))[0];
const queueNow = async () => new Date((await db.pool.query(`SELECT "${db.schema}".queue_now() AS t`)).rows[0].t).getTime();

describe('On Duplicate Key', () => {
	test('keep (the default): the first task is returned unchanged, outcome duplicate', async () => {
		const queue = db.queueName('m-keep');
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k' });
		const b = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k' });
		const c = await one({ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'k', onDuplicate: 'keep' });
		expect([a.outcome, b.outcome, c.outcome]).toEqual(['enqueued', 'duplicate', 'duplicate']);
		expect([b.taskId, c.taskId]).toEqual([a.taskId, a.taskId]);
		expect((await live(a.taskId)).payload).toEqual({ v: 1 });
		// Without a key: the fast path, outcome enqueued.
		expect((await one({ queue, group: 'high', payload: {} })).outcome).toBe('enqueued');
	});

	test('payload: a pending task takes the new payload and keeps its run time and its place in line', async () => {
		const queue = db.queueName('m-payload');
		const [first] = await db.fill(queue, 'high', 1);
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k' });
		const before = await live(a.taskId);
		expect(before.vtag).not.toBeNull();
		const b = await one({ queue, group: 'low', payload: { v: 2 }, dedupeKey: 'k', onDuplicate: 'payload', delaySeconds: 600, maxAttempts: 9 });
		expect(b).toMatchObject({ taskId: a.taskId, outcome: 'replaced', deduplicated: true, status: 'pending', payload: { v: 2 }, group: 'high', maxAttempts: 5 });
		expect(b.availableAt).toBe(a.availableAt);
		const after = await live(a.taskId);
		expect(after).toMatchObject({ payload: { v: 2 }, vtag: before.vtag, priority_group: 'high', max_attempts: 5 });
		const got = await claim(queue);
		expect(got.map((t) => [t.taskId, t.payload])).toEqual([
			[first, { n: 0 }],
			[a.taskId, { v: 2 }],
		]);
	});

	test('payload_run_at: moved later the task loses its tag until due; moved earlier it is claimable and listeners are woken', async () => {
		const queue = db.queueName('m-runat');
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k' });
		const later = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', onDuplicate: 'payload_run_at', delaySeconds: 600 });
		expect(later).toMatchObject({ taskId: a.taskId, outcome: 'replaced', payload: { v: 2 } });
		expect(Date.parse(later.availableAt as string) - (await queueNow())).toBeGreaterThan(590_000);
		expect((await live(a.taskId)).vtag).toBeNull();
		expect(await claim(queue)).toEqual([]);
		// Moved earlier again (no delay: now): a listener hears the queue name; the next claim tags and takes it.
		const c = await db.client();
		const heard: Array<{ payload?: string }> = [];
		c.on('notification', (n) => heard.push(n));
		const channel = queueChannel(db.ledgerSchema, queue);
		await c.query(`LISTEN "${channel}"`);
		const earlier = await one({ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'k', onDuplicate: 'payload_run_at' });
		expect(earlier).toMatchObject({ taskId: a.taskId, outcome: 'replaced', payload: { v: 3 } });
		await drainNotifications(db.pool, channel, heard);
		expect(heard.map((n) => n.payload)).toEqual([queue]);
		// A replace that does not move the run time earlier wakes nobody.
		await one({ queue, group: 'high', payload: { v: 4 }, dedupeKey: 'k', onDuplicate: 'payload' });
		await drainNotifications(db.pool, channel, heard);
		expect(heard.map((n) => n.payload)).toEqual([queue]);
		const got = await claim(queue);
		expect(got.map((t) => [t.taskId, t.payload])).toEqual([[a.taskId, { v: 4 }]]);
	});

	test('a task being worked on keeps its payload: kept_processing, nothing written', async () => {
		const queue = db.queueName('m-held');
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k' });
		const [lease] = await claim(queue);
		const before = await live(a.taskId);
		for (const onDuplicate of ['payload', 'payload_run_at'] as const) {
			const r = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', onDuplicate });
			expect(r).toMatchObject({ taskId: a.taskId, outcome: 'kept_processing', status: 'processing', payload: { v: 1 } });
		}
		expect(await live(a.taskId)).toEqual(before);
		expect((await complete(db.pool, db.ledgerSchema, [{ ...lease }]))[0].outcome).toBe('completed');
		// Finished: the key is free, a replace enqueues anew.
		const again = await one({ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'k', onDuplicate: 'payload' });
		expect(again.outcome).toBe('enqueued');
		expect(again.taskId).not.toBe(a.taskId);
	});

	test('one batch: items of one key apply in order (the first enqueues, the later ones replace); plain keyed and keyless items alongside', async () => {
		const queue = db.queueName('m-batch');
		const res = await put([
			{ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', onDuplicate: 'payload' },
			{ queue, group: 'high', payload: { plain: true } },
			{ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', onDuplicate: 'payload' },
			{ queue, group: 'high', payload: { other: 1 }, dedupeKey: 'other' },
			{ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'k', onDuplicate: 'payload' },
		]);
		expect(res.map((r) => r.outcome)).toEqual(['enqueued', 'enqueued', 'replaced', 'enqueued', 'replaced']);
		expect(res[4].taskId).toBe(res[0].taskId);
		expect(res[4].payload).toEqual({ v: 3 });
		const got = await claim(queue);
		expect(got.map((t) => t.payload).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)))).toEqual([{ other: 1 }, { plain: true }, { v: 3 }]);
	});
});

describe('Throttle', () => {
	test('at most one task per key per window from its enqueue: throttled writes nothing, even after the task finished', async () => {
		const queue = db.queueName('m-throttle');
		const t0 = await queueNow();
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', throttleSeconds: 60 });
		expect(a.outcome).toBe('enqueued');
		const b = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', throttleSeconds: 60 });
		expect(b).toMatchObject({ outcome: 'throttled', taskId: a.taskId, deduplicated: true, status: null, payload: null, availableAt: null, enqueuedAt: a.enqueuedAt });
		expect(Date.parse(b.throttledUntil as string) - Date.parse(a.enqueuedAt)).toBe(60_000);
		// The task finishes (archived): still throttled inside the window.
		const [lease] = await claim(queue);
		await complete(db.pool, db.ledgerSchema, [{ ...lease }]);
		expect(await live(a.taskId)).toBeUndefined();
		await advanceQueueClock(db.pool, db.schema, 59);
		expect((await one({ queue, group: 'high', payload: { v: 3 }, dedupeKey: 'k', throttleSeconds: 60 })).outcome).toBe('throttled');
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows[0].n).toBe(0);
		// Past the window (measured from a's enqueue): a new task, and a new window from its enqueue.
		await advanceQueueClock(db.pool, db.schema, 2);
		const c = await one({ queue, group: 'high', payload: { v: 4 }, dedupeKey: 'k', throttleSeconds: 60 });
		expect(c.outcome).toBe('enqueued');
		expect(Date.parse(c.enqueuedAt) - t0).toBeGreaterThanOrEqual(61_000);
		const d = await one({ queue, group: 'high', payload: { v: 5 }, dedupeKey: 'k', throttleSeconds: 60 });
		expect(d).toMatchObject({ outcome: 'throttled', taskId: c.taskId });
		// Another key has its own window.
		expect((await one({ queue, group: 'high', payload: {}, dedupeKey: 'k2', throttleSeconds: 60 })).outcome).toBe('enqueued');
	});

	test('past the window with the first task still live: a keep-first duplicate, which opens no window', async () => {
		const queue = db.queueName('m-throttle-live');
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', throttleSeconds: 10, delaySeconds: 3600 });
		await advanceQueueClock(db.pool, db.schema, 11);
		const b = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', throttleSeconds: 10 });
		expect(b).toMatchObject({ outcome: 'duplicate', taskId: a.taskId, payload: { v: 1 } });
		const { rows } = await db.pool.query(`SELECT task_id::text, ends_at FROM "${db.schema}".queue_throttle_windows WHERE queue = $1`, [queue]);
		expect(rows).toHaveLength(1);
		expect(rows[0].task_id).toBe(a.taskId);
	});

	test('one batch and concurrent callers: exactly one enqueue of a key per window', async () => {
		const queue = db.queueName('m-throttle-race');
		const batch = await put([1, 2, 3].map((v) => ({ queue, group: 'high', payload: { v }, dedupeKey: 'k', throttleSeconds: 60 })));
		expect(batch.map((r) => r.outcome)).toEqual(['enqueued', 'throttled', 'throttled']);
		const all = await Promise.all(Array.from({ length: 8 }, (_, v) => one({ queue, group: 'high', payload: { v }, dedupeKey: 'k2', throttleSeconds: 60 })));
		expect(all.filter((r) => r.outcome === 'enqueued')).toHaveLength(1);
		expect(all.filter((r) => r.outcome === 'throttled')).toHaveLength(7);
	});

	test('Purge deletes windows that have ended, never an open one', async () => {
		const queue = db.queueName('m-throttle-purge');
		await one({ queue, group: 'high', payload: {}, dedupeKey: 'old', throttleSeconds: 5 });
		await advanceQueueClock(db.pool, db.schema, 6);
		await one({ queue, group: 'high', payload: {}, dedupeKey: 'open', throttleSeconds: 60 });
		await db.pool.query(`SELECT * FROM "${db.schema}".queue_purge($1, NULL, 86400, 100)`, [queue]);
		const { rows } = await db.pool.query(`SELECT dedupe_key FROM "${db.schema}".queue_throttle_windows WHERE queue = $1`, [queue]);
		expect(rows).toEqual([{ dedupe_key: 'open' }]);
	});
});

describe('Debounce', () => {
	test('the last one wins: each enqueue while pending replaces the payload and pushes run_at to now + window', async () => {
		const queue = db.queueName('m-debounce');
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', debounceSeconds: 10 });
		expect(a.outcome).toBe('enqueued');
		expect(Date.parse(a.availableAt as string) - Date.parse(a.enqueuedAt)).toBe(10_000);
		await advanceQueueClock(db.pool, db.schema, 6);
		expect(await claim(queue)).toEqual([]);
		const b = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', debounceSeconds: 10 });
		expect(b).toMatchObject({ outcome: 'replaced', taskId: a.taskId, payload: { v: 2 } });
		expect(Date.parse(b.availableAt as string) - (await queueNow())).toBeGreaterThan(9_000);
		// 11 s after the first enqueue, 5 after the second: not yet.
		await advanceQueueClock(db.pool, db.schema, 5);
		expect(await claim(queue)).toEqual([]);
		await advanceQueueClock(db.pool, db.schema, 6);
		const got = await claim(queue);
		expect(got.map((t) => [t.taskId, t.payload])).toEqual([[a.taskId, { v: 2 }]]);
	});

	test('claimed meanwhile: the running task keeps its payload and gives up its key; a new task is enqueued', async () => {
		const queue = db.queueName('m-debounce-held');
		const a = await one({ queue, group: 'high', payload: { v: 1 }, dedupeKey: 'k', debounceSeconds: 10 });
		await advanceQueueClock(db.pool, db.schema, 11);
		const [lease] = await claim(queue);
		expect(lease.taskId).toBe(a.taskId);
		const b = await one({ queue, group: 'high', payload: { v: 2 }, dedupeKey: 'k', debounceSeconds: 10 });
		expect(b).toMatchObject({ outcome: 'enqueued', deduplicated: false, payload: { v: 2 }, dedupeKey: 'k' });
		expect(b.taskId).not.toBe(a.taskId);
		expect(await live(a.taskId)).toMatchObject({ status: 'processing', payload: { v: 1 }, dedupe_key: null, superseded_dedupe_key: 'k' });
		// The running task settles as usual; the new one runs after its window.
		expect((await complete(db.pool, db.ledgerSchema, [{ ...lease }]))[0].outcome).toBe('completed');
		await advanceQueueClock(db.pool, db.schema, 11);
		expect((await claim(queue)).map((t) => [t.taskId, t.payload])).toEqual([[b.taskId, { v: 2 }]]);
	});
});

describe('replace racing claims', () => {
	/** Keys (one task each): the claimers take the oldest first, the replacers go newest first, so both meet every run. */
	const KEYS = 300;
	test('4 claimers and 3 replacers at once: a claimed payload is one enqueued or replaced for its key, a processing task is never changed', async () => {
		const queue = db.queueName('m-race');
		const keys = Array.from({ length: KEYS }, (_, k) => `key-${k}`);
		const sent = new Map<string, Set<string>>(keys.map((k) => [k, new Set<string>()]));
		const payload = (key: string, by: string, round: number) => {
			const p = { key, by, round };
			sent.get(key)?.add(JSON.stringify(p));
			return p;
		};
		await put(keys.map((key) => ({ queue, group: 'high', payload: payload(key, 'seed', 0), dedupeKey: key })));
		const claimed: ClaimedTask[] = [];
		const answers: EnqueuedTask[] = [];
		let stop = false;
		const claimer = async () => {
			while (!stop) {
				const got = await claim(queue, 1);
				claimed.push(...got);
				await new Promise((r) => setImmediate(r)); // yield to the replacers, no wait: both sides run back to back
			}
		};
		const replacer = async (name: string) => {
			const newestFirst = [...keys].reverse();
			for (let round = 1; round <= 4; round++) {
				for (let k = 0; k < KEYS; k += 8) {
					const slice = newestFirst.slice(k, k + 8);
					answers.push(...(await put(slice.map((key, j) => ({ queue, group: 'high', payload: payload(key, name, round), dedupeKey: key, onDuplicate: j % 2 === 0 ? 'payload' : 'payload_run_at' })))));
				}
			}
		};
		const claimers = Array.from({ length: 4 }, claimer);
		await Promise.all(['r1', 'r2', 'r3'].map(replacer));
		stop = true;
		await Promise.all(claimers);
		// A final round after the race: every claimed task is kept as it was claimed.
		const last = await put(keys.map((key) => ({ queue, group: 'high', payload: payload(key, 'last', 99), dedupeKey: key, onDuplicate: 'payload' })));
		answers.push(...last);
		const byTask = new Map<string, ClaimedTask>();
		const strays: unknown[] = [];
		for (const t of claimed) {
			expect(byTask.has(t.taskId)).toBe(false);
			byTask.set(t.taskId, t);
			// A consistent row: the payload was sent for this very key.
			const p = t.payload as { key: string; by: string; round: number };
			if (t.dedupeKey === null || p.key !== t.dedupeKey || !sent.get(t.dedupeKey)?.has(JSON.stringify({ key: p.key, by: p.by, round: p.round }))) strays.push(t);
		}
		expect(strays).toEqual([]);
		// Never changed after the claim: the row holds what the claim was given.
		const { rows } = await db.pool.query(`SELECT id::text, status, payload, dedupe_key FROM "${db.schema}".queue_tasks WHERE queue = $1`, [queue]);
		expect(rows).toHaveLength(KEYS);
		for (const r of rows) {
			const held = byTask.get(r.id);
			if (held) expect(r).toMatchObject({ status: 'processing', payload: held.payload });
			else expect(r).toMatchObject({ status: 'pending', payload: { key: r.dedupe_key, by: 'last', round: 99 } });
		}
		// Every answer is consistent with what the task was: kept_processing shows the claimed payload.
		for (const a of answers) {
			expect(['replaced', 'kept_processing']).toContain(a.outcome);
			if (a.outcome === 'kept_processing') expect(a.payload).toEqual(byTask.get(a.taskId)?.payload);
			else expect(a.status).toBe('pending');
		}
		// Both sides happened.
		expect(claimed.length).toBeGreaterThan(0);
		expect(answers.filter((a) => a.outcome === 'replaced').length).toBeGreaterThan(0);
		expect(answers.filter((a) => a.outcome === 'kept_processing').length).toBeGreaterThan(0);
		// A task claimed after a replace got one of the replaced payloads, not always the seed.
		expect(claimed.some((t) => (t.payload as { by: string }).by !== 'seed')).toBe(true);
	}, 120_000);
});

describe('input and the node', () => {
	test('bad options are InputError for the item; the SQL function refuses them too (22023)', async () => {
		const base = { queue: 'q', group: 'high', payload: {} };
		expect(() => prepareEnqueueInput({ ...base, onDuplicate: 'payload' })).toThrow(/needs a dedupe key/);
		expect(() => prepareEnqueueInput({ ...base, throttleSeconds: 5 })).toThrow(InputError);
		expect(() => prepareEnqueueInput({ ...base, dedupeKey: 'k', onDuplicate: 'overwrite' as never })).toThrow(/On duplicate key must be one of/);
		expect(() => prepareEnqueueInput({ ...base, dedupeKey: 'k', throttleSeconds: 5, debounceSeconds: 5 })).toThrow(/one of/);
		expect(() => prepareEnqueueInput({ ...base, dedupeKey: 'k', onDuplicate: 'payload', debounceSeconds: 5 })).toThrow(/one of/);
		expect(() => prepareEnqueueInput({ ...base, dedupeKey: 'k', throttleSeconds: 0 })).toThrow(/Throttle window/);
		expect(() => prepareEnqueueInput({ ...base, dedupeKey: 'k', debounceSeconds: 31_536_001 })).toThrow(/Debounce window/);
		expect(prepareEnqueueInput({ ...base, dedupeKey: 'k', onDuplicate: 'keep', throttleSeconds: 1 })).toMatchObject({ throttleSeconds: 1 });
		const sql = (item: object) => db.pool.query(`SELECT * FROM "${db.schema}".queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'q', g: 'high', p: {}, ...item }])]);
		for (const bad of [{ r: 'payload' }, { k: 'k', r: 'nope' }, { w: 5 }, { k: 'k', w: 5, b: 5 }, { k: 'k', r: 'payload', w: 5 }, { k: 'k', w: 0 }, { k: 'k', b: 31536001 }]) {
			await expect(sql(bad)).rejects.toMatchObject({ code: '22023' });
		}
	});

	test('the node: the options reach the enqueue, outcomes on Result, a bad item on Unrecorded', async () => {
		const queue = db.queueName('m-node');
		const run = (options: Record<string, unknown>, keys: string[]) =>
			new PriorityDequeue().execute.call(
				fakeExecute({
					items: keys.map((k) => ({ json: { k } })),
					params: { resource: 'task', operation: 'enqueue', queue, priorityGroup: 'high', payload: (i: number) => ({ n: i, k: keys[i] }), dedupeKey: (i: number) => keys[i], options },
					credentials: testCredentials(DATABASE_URL, db.schema),
					continueOnFail: true,
				}),
			);
		const first = await run({ throttleSeconds: 30 }, ['a', 'b']);
		expect(first[1].map((it) => it.json.outcome)).toEqual(['enqueued', 'enqueued']);
		const second = await run({ throttleSeconds: 30 }, ['a', '']);
		expect(second[0].map((it) => it.pairedItem)).toEqual([{ item: 1 }]);
		expect(second[1].map((it) => [it.json.outcome, it.pairedItem])).toEqual([['throttled', { item: 0 }]]);
		const third = await run({ onDuplicate: 'payload_run_at', delaySeconds: 100 }, ['b']);
		expect(third[1][0].json).toMatchObject({ outcome: 'replaced', taskId: first[1][1].json.taskId });
		expect(await live(first[1][1].json.taskId as string)).toMatchObject({ payload: { n: 0, k: 'b' }, vtag: null });
		const fourth = await run({ debounceSeconds: 20 }, ['c', 'c']);
		expect(fourth[1].map((it) => it.json.outcome)).toEqual(['enqueued', 'replaced']);
	});
});
