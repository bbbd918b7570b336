/**
 * Every statement of the queue path is bounded (src/db/bounds.ts): with a pool, each call runs in a
 * transaction of its own with SET LOCAL lock_timeout / statement_timeout, so a task another session
 * holds locked makes Complete, Fail, Release, Extend Lease and Requeue Dead fail within the lock
 * timeout with a clear, retry-safe error (and change nothing) instead of waiting; a slow Stats
 * meets the statement timeout; Claim and Purge never wait on a row (SKIP LOCKED) and meet the lock
 * timeout on a table lock. A client passed in runs in the caller's transaction, unbounded by us.
 * The one-round-trip form sends values as literals: quotes, backslashes, braces and "NULL" survive.
 */
import net from 'node:net';
import { Client } from 'pg';
import { connectListener } from '../../../src/queue/listen';
import { LedgerBusyError, boundedQuery } from '../../../src/db/bounds';
import { complete, dequeue, enqueue, extendLease, fail, nextDue, nextDueFor, purge, release, requeueDead, stats, type ClaimedTask } from '../../../src/queue';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';
import { testCredentials } from '../../helpers/fakeExecute';
import { activateTrigger } from '../../helpers/triggerHarness';
import { complete as completeNode } from '../hardening/run';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_qbounds' });
});
afterAll(async () => {
	await db.drop();
});

const LOCK = { statementTimeoutMs: 10_000, lockTimeoutMs: 300 };

/** A second session holding `sql`'s locks (e.g. SELECT … FOR UPDATE, LOCK TABLE) until release(). */
async function hold(sql: string, values: unknown[] = []) {
	const c = new Client({ connectionString: DATABASE_URL });
	await c.connect();
	await c.query('BEGIN');
	await c.query(sql, values);
	return {
		async release() {
			await c.query('ROLLBACK').catch(() => undefined);
			await c.end();
		},
	};
}

async function claimOne(queue: string): Promise<ClaimedTask> {
	await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', payload: { queue } }]);
	const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 300 });
	expect(t).toBeDefined();
	return t;
}

const row = async (id: string) =>
	(await db.pool.query(`SELECT status, attempts, lease_token::text AS tok, lease_expires_at FROM ${db.schemaSql}.queue_tasks WHERE id = $1`, [id])).rows[0];

/** Runs `call` and expects a lock-timeout LedgerBusyError within `maxMs`. */
async function expectLockTimeout(call: () => Promise<unknown>, maxMs = 3_000) {
	const t0 = Date.now();
	const err = await call().then(
		() => undefined,
		(e: unknown) => e,
	);
	const ms = Date.now() - t0;
	expect(err).toBeInstanceOf(LedgerBusyError);
	expect((err as LedgerBusyError).code).toBe('55P03');
	expect((err as Error).message).toMatch(/row lock was not granted within the lock timeout \(300 ms\).*nothing of it was recorded; running it again is safe/);
	expect(ms).toBeGreaterThanOrEqual(250);
	expect(ms).toBeLessThan(maxMs);
}

describe('a task locked by another session', () => {
	const settles: Array<[string, (t: ClaimedTask) => Promise<unknown>]> = [
		['complete', (t) => complete(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, result: { ok: true } }], LOCK)],
		['fail', (t) => fail(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, error: 'boom' }], {}, LOCK)],
		['release', (t) => release(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken }], LOCK)],
		['extendLease', (t) => extendLease(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, leaseSeconds: 900 }], LOCK)],
	];
	for (const [name, call] of settles) {
		it(`${name} fails with a lock-timeout error within the bound and changes nothing; after the lock it works`, async () => {
			const t = await claimOne(`locked-${name}`);
			const before = await row(t.taskId);
			const lock = await hold(`SELECT 1 FROM ${db.schemaSql}.queue_tasks WHERE id = $1 FOR UPDATE`, [t.taskId]);
			try {
				await expectLockTimeout(() => call(t));
			} finally {
				await lock.release();
			}
			expect(await row(t.taskId)).toEqual(before);
			const [after] = (await call(t)) as Array<{ outcome: string }>;
			expect(['completed', 'retry_scheduled', 'released', 'extended']).toContain(after.outcome);
		});
	}

	it('requeueDead of a locked dead task fails with a lock-timeout error; the task stays dead', async () => {
		const t = await claimOne('locked-requeue');
		await fail(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, error: 'boom', giveUp: true }]);
		const lock = await hold(`SELECT 1 FROM ${db.schemaSql}.queue_tasks WHERE id = $1 FOR UPDATE`, [t.taskId]);
		try {
			await expectLockTimeout(() => requeueDead(db.pool, db.ledgerSchema, { queue: 'locked-requeue', taskIds: [t.taskId] }, LOCK));
		} finally {
			await lock.release();
		}
		expect((await row(t.taskId)).status).toBe('dead');
		expect((await requeueDead(db.pool, db.ledgerSchema, { queue: 'locked-requeue', taskIds: [t.taskId] }, LOCK))[0].outcome).toBe('requeued');
	});

	it('purge skips a locked dead task at once (SKIP LOCKED) and meets the lock timeout on a table lock', async () => {
		const t = await claimOne('locked-purge');
		await fail(db.pool, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken, error: 'boom', giveUp: true }]);
		const rowLock = await hold(`SELECT 1 FROM ${db.schemaSql}.queue_tasks WHERE id = $1 FOR UPDATE`, [t.taskId]);
		try {
			const t0 = Date.now();
			expect(await purge(db.pool, db.ledgerSchema, { queue: 'locked-purge', deadAfterSeconds: 0 }, LOCK)).toEqual({ deadArchived: 0, archiveDeleted: 0 });
			expect(Date.now() - t0).toBeLessThan(1_000);
		} finally {
			await rowLock.release();
		}
		const tableLock = await hold(`LOCK TABLE ${db.schemaSql}.queue_tasks_archive IN ACCESS EXCLUSIVE MODE`);
		try {
			await expectLockTimeout(() => purge(db.pool, db.ledgerSchema, { queue: 'locked-purge', deadAfterSeconds: 0 }, LOCK));
		} finally {
			await tableLock.release();
		}
		expect((await row(t.taskId)).status).toBe('dead');
		expect(await purge(db.pool, db.ledgerSchema, { queue: 'locked-purge', deadAfterSeconds: 0 }, LOCK)).toEqual({ deadArchived: 1, archiveDeleted: 0 });
	});

	it('a claim does not wait for a locked task (SKIP LOCKED); with the table locked it fails within the lock timeout and claims nothing', async () => {
		const queue = 'locked-claim';
		await enqueue(db.pool, db.ledgerSchema, [
			{ queue, group: 'normal', payload: { n: 1 } },
			{ queue, group: 'normal', payload: { n: 2 } },
		]);
		const ids = (await db.pool.query<{ id: string }>(`SELECT id::text FROM ${db.schemaSql}.queue_tasks WHERE queue = $1 ORDER BY id`, [queue])).rows.map((r) => r.id);
		const rowLock = await hold(`SELECT 1 FROM ${db.schemaSql}.queue_tasks WHERE id = $1 FOR UPDATE`, [ids[0]]);
		try {
			const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 }, LOCK);
			expect(got.map((t) => t.taskId)).toEqual([ids[1]]);
		} finally {
			await rowLock.release();
		}
		const tableLock = await hold(`LOCK TABLE ${db.schemaSql}.queue_tasks IN ACCESS EXCLUSIVE MODE`);
		try {
			await expectLockTimeout(() => dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 }, LOCK));
		} finally {
			await tableLock.release();
		}
		expect((await row(ids[0])).status).toBe('pending');
	});
});

describe('the statement timeout', () => {
	it('stats that cannot finish in time fail with a statement-timeout error within the bound', async () => {
		await enqueue(db.pool, db.ledgerSchema, [{ queue: 'slow-stats', group: 'normal', payload: {} }]);
		// A lock held elsewhere keeps stats waiting; with a long lock timeout, the statement timeout ends it.
		const lock = await hold(`LOCK TABLE ${db.schemaSql}.queue_tasks IN ACCESS EXCLUSIVE MODE`);
		try {
			const t0 = Date.now();
			const err = await stats(db.pool, db.ledgerSchema, 'slow-stats', { statementTimeoutMs: 400, lockTimeoutMs: 60_000 }).catch((e: unknown) => e);
			expect(err).toBeInstanceOf(LedgerBusyError);
			expect((err as LedgerBusyError).code).toBe('57014');
			expect((err as Error).message).toMatch(/statement did not finish within the statement timeout \(400 ms\)/);
			expect(Date.now() - t0).toBeLessThan(3_000);
		} finally {
			await lock.release();
		}
		expect((await stats(db.pool, db.ledgerSchema, 'slow-stats', LOCK)).ready).toBe(1);
	});

	it('the trigger\'s due checks are bounded too', async () => {
		const lock = await hold(`LOCK TABLE ${db.schemaSql}.queue_tasks IN ACCESS EXCLUSIVE MODE`);
		try {
			await expectLockTimeout(() => nextDueFor(db.pool, db.ledgerSchema, 'slow-stats', ['normal'], LOCK));
			await expectLockTimeout(() => nextDue(db.pool, db.ledgerSchema, 'slow-stats', LOCK));
		} finally {
			await lock.release();
		}
		expect((await nextDue(db.pool, db.ledgerSchema, 'slow-stats', LOCK)).due).toBe(true);
	});

	it('each call sets its bounds with SET LOCAL: nothing stays on the pooled connection', async () => {
		const one = new (await import('pg')).Pool({ connectionString: DATABASE_URL, max: 1 });
		try {
			await stats(one, db.ledgerSchema, 'slow-stats', { statementTimeoutMs: 1234, lockTimeoutMs: 567 });
			await dequeue(one, db.ledgerSchema, { queue: 'nothing-here', limit: 1 }, { statementTimeoutMs: 1234, lockTimeoutMs: 567 });
			const { rows } = await one.query(`SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l`);
			expect(rows[0]).toEqual({ s: '0', l: '0' });
		} finally {
			await one.end();
		}
	});
});

describe('round trips', () => {
	it('a claim, a settle and a due check each cost one round trip; stats (two statements) three', async () => {
		const { Pool } = await import('pg');
		const one = new Pool({ connectionString: DATABASE_URL, max: 1 });
		const sent: string[] = [];
		one.on('connect', (client) => {
			const q = client.query.bind(client);
			(client as unknown as { query: unknown }).query = (...args: Parameters<typeof q>) => {
				sent.push(String((args[0] as unknown as { text?: string })?.text ?? args[0]));
				return q(...args);
			};
		});
		try {
			await enqueue(db.pool, db.ledgerSchema, [{ queue: 'trips', group: 'normal', payload: {} }]);
			sent.length = 0;
			const [t] = await dequeue(one, db.ledgerSchema, { queue: 'trips', limit: 1 }, LOCK);
			expect(sent).toEqual([expect.stringMatching(/^BEGIN; SET LOCAL statement_timeout = 10000; SET LOCAL lock_timeout = 300; SELECT \* FROM "ol_qbounds_\w+"\.queue_claim\('trips', '\{"high","normal","low"\}'::text\[\], '\{"5","2","1"\}'::integer\[\], '1', '300', '300', NULL::text\[\]\); COMMIT$/)]);
			sent.length = 0;
			await complete(one, db.ledgerSchema, [{ taskId: t.taskId, leaseToken: t.leaseToken }], LOCK);
			await nextDueFor(one, db.ledgerSchema, 'trips', null, LOCK);
			expect(sent).toHaveLength(2);
			sent.length = 0;
			await stats(one, db.ledgerSchema, 'trips', LOCK);
			expect(sent).toHaveLength(4);
		} finally {
			await one.end();
		}
	});
});

describe('inside the caller\'s transaction', () => {
	it('a client passed in runs the call in its transaction: no COMMIT of ours, the caller\'s ROLLBACK undoes it', async () => {
		const c = await db.pool.connect();
		try {
			await c.query('BEGIN');
			await c.query(`SET LOCAL lock_timeout = 1234`);
			const [t] = await enqueue(c, db.ledgerSchema, [{ queue: 'in-caller-txn', group: 'normal', payload: {} }], {}, LOCK);
			expect((await c.query(`SELECT current_setting('lock_timeout') AS l`)).rows[0].l).toBe('1234ms');
			expect((await c.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.queue_tasks WHERE id = $1`, [t.taskId])).rows[0].n).toBe(1);
			await c.query('ROLLBACK');
			expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.queue_tasks WHERE id = $1`, [t.taskId])).rows[0].n).toBe(0);
		} finally {
			c.release();
		}
	});
});

describe('values sent as literals in the one-round-trip form', () => {
	it('quotes, backslashes, braces, commas, "NULL" and emoji reach Postgres exactly', async () => {
		const queue = `q'uo"te\\s {a,b} 😀`;
		const groups = [`g"1\\,{x}`, 'NULL', "it's"];
		await enqueue(db.pool, db.ledgerSchema, groups.map((group, n) => ({ queue, group, payload: { n, s: `a'b"c\\d {e} \u00e9 😀`, group } })));
		const tasks = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60, groups: groups.map((name) => ({ name, weight: 1 })) });
		expect(tasks.map((t) => t.group).sort()).toEqual([...groups].sort());
		for (const t of tasks) expect(t.payload).toEqual({ n: groups.indexOf(t.group), s: `a'b"c\\d {e} \u00e9 😀`, group: t.group });
		const result = { text: "O'Brien \\ \"q\" $1 $$ -- /* */ ;" };
		const done = await complete(db.pool, db.ledgerSchema, tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken, result })));
		expect(done.map((d) => d.outcome)).toEqual(['completed', 'completed', 'completed']);
		const { rows } = await db.pool.query(`SELECT DISTINCT result FROM ${db.schemaSql}.queue_tasks_archive WHERE queue = $1`, [queue]);
		expect(rows).toEqual([{ result }]);
		const s = await stats(db.pool, db.ledgerSchema, queue);
		expect(s.groups.map((g) => g.group).sort()).toEqual([...groups].sort());
	});
});

describe('inlined literals mean what the parameters mean', () => {
	const sql = 'SELECT $1::text AS t, $2::text[] AS a, $3::int AS i, $4::float8 AS f, $5::jsonb AS j, $6::bool AS b, $7::text AS n, $8::timestamptz AS d';
	const values = [
		"O'Brien \\ \"q\" $1 $$ -- /* */ ; \u00e9 😀 E'x'",
		['a"b', 'c\\d', null, 'x,y', '{z}', 'NULL', "it's", ''],
		-5,
		-1.5e-7,
		{ k: "v'\\", n: [1, null], deep: { e: '😀' } },
		false,
		null,
		new Date('2026-12-01T07:00:00.123Z'),
	];
	it.each([
		['standard_conforming_strings on', ''],
		['standard_conforming_strings off (legacy servers)', '-c standard_conforming_strings=off'],
	])('%s: boundedQuery (one round trip) returns what a parameterised query returns', async (_name, options) => {
		const { Pool } = await import('pg');
		const pool = new Pool({ connectionString: DATABASE_URL, max: 2, options: options || undefined });
		try {
			const expected = (await pool.query(sql, values)).rows;
			// Record what boundedQuery sends, to prove it took the one-round-trip (inlined) form.
			const seen: unknown[] = [];
			pool.on('acquire', (client) => {
				const q = client.query.bind(client) as (...a: unknown[]) => unknown;
				(client as unknown as { query: unknown }).query = (...a: unknown[]) => {
					// A config object ({ text, query_timeout }: the client's deadline) or a text.
					seen.push(typeof a[0] === 'string' ? a[0] : (a[0] as { text: string }).text);
					return q(...a);
				};
			});
			const got = await boundedQuery<{ a: unknown; t: unknown }>(pool, sql, values);
			expect(seen).toHaveLength(1);
			expect(String(seen[0])).toMatch(/^BEGIN; SET LOCAL statement_timeout = \d+; SET LOCAL lock_timeout = \d+; SELECT .*O''Brien.*; COMMIT$/s);
			expect(got).toEqual(expected);
			expect(got[0].a).toEqual(values[1]);
			expect(got[0].t).toBe(values[0]);
		} finally {
			await pool.end();
		}
	});
});

describe('the inlining plan kept per statement text', () => {
	it('the same text again with other values: each call returns its own values (the plan holds none); a repeated and a two-digit placeholder are each filled', async () => {
		const text =
			'SELECT $1::text AS a, $2::int AS b, $1::text AS again, $10::text AS ten, $3::text AS c, $4::text AS d, $5::text AS e, $6::text AS f, $7::text AS g, $8::text AS h, $9::text AS i';
		for (const n of [1, 2, 3]) {
			const values = [`v'${n}`, n, 'c', 'd', 'e', 'f', 'g', 'h', `i${n}`, `ten${n}`];
			const got = await boundedQuery(db.pool, text, values);
			expect(got).toEqual([{ a: `v'${n}`, b: n, again: `v'${n}`, ten: `ten${n}`, c: 'c', d: 'd', e: 'e', f: 'f', g: 'g', h: 'h', i: `i${n}` }]);
		}
	});

	it('a text that may not be inlined (a quote in it) goes the parameterised way every time, with its own values', async () => {
		for (const n of [1, 2]) expect(await boundedQuery(db.pool, "SELECT $1::text || ';x' AS s", [`${n}`])).toEqual([{ s: `${n};x` }]);
	});
});

describe('the credential\'s bounds reach the nodes', () => {
	it('Priority Dequeue Complete on a locked task: an item error on Unrecorded within the credential\'s Lock Timeout', async () => {
		const t = await claimOne('node-locked');
		const lock = await hold(`SELECT 1 FROM ${db.schemaSql}.queue_tasks WHERE id = $1 FOR UPDATE`, [t.taskId]);
		try {
			const t0 = Date.now();
			const out = await completeNode(testCredentials(DATABASE_URL, db.schema, { lockTimeoutMs: 300, statementTimeoutMs: 10_000 }), [t], { continueOnFail: true });
			expect(Date.now() - t0).toBeLessThan(3_000);
			expect(out[0]).toEqual([
				// A bound that fired: sending the same item again later can succeed as it is.
				expect.objectContaining({ json: { error: expect.stringMatching(/Complete failed and nothing of this batch was recorded.*lock timeout \(300 ms\).*running it again is safe/), retryable: true } }),
			]);
			expect(out[1]).toEqual([]);
		} finally {
			await lock.release();
		}
		expect((await row(t.taskId)).status).toBe('processing');
	});

	it('the trigger (Claim mode): with the queue table locked, its claim gives up within the credential\'s Lock Timeout and it claims once the lock is gone', async () => {
		const queue = 'trigger-locked';
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'normal', payload: {} }]);
		const lock = await hold(`LOCK TABLE ${db.schemaSql}.queue_tasks IN ACCESS EXCLUSIVE MODE`);
		let released = false;
		const t = await activateTrigger({
			credentials: testCredentials(DATABASE_URL, db.schema, { lockTimeoutMs: 300, statementTimeoutMs: 10_000 }),
			parameters: { queue, mode: 'claim', batchSize: 10, leaseSeconds: 60, useListen: false, pollSeconds: 1, maxInFlight: 1, options: {} },
			consumer: async () => 'success',
		}).catch(async (e: unknown) => {
			await lock.release();
			throw e;
		});
		try {
			await waitFor(() => t.warnings.length > 0, { what: 'the warning of the failed check', timeoutMs: 5_000 });
			expect(t.warnings[0]).toMatch(/checking the queue failed \(The database did not answer in time: a row lock was not granted within the lock timeout \(300 ms\)/);
			expect(t.emitted).toEqual([]);
			await lock.release();
			released = true;
			await waitFor(() => t.emitted.length > 0, { what: 'the claim after the lock was released', timeoutMs: 5_000 });
			expect(t.emitted).toHaveLength(1);
		} finally {
			if (!released) await lock.release();
			await t.close();
		}
	});
});

/** A TCP proxy to Postgres that can be frozen: from then on it passes nothing either way (a silent network). */
async function freezableProxy(target: URL) {
	let frozen = false;
	const sockets: net.Socket[] = [];
	// allowHalfOpen: a frozen proxy does not even answer the client's FIN (a partitioned network).
	const server = net.createServer({ allowHalfOpen: true }, (client) => {
		const upstream = net.connect(Number(target.port || 5432), target.hostname);
		sockets.push(client, upstream);
		client.on('data', (d) => {
			if (!frozen) upstream.write(d);
		});
		upstream.on('data', (d) => {
			if (!frozen) client.write(d);
		});
		const end = () => {
			client.destroy();
			upstream.destroy();
		};
		client.on('error', end);
		upstream.on('error', end);
		client.on('close', end);
		upstream.on('close', end);
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const port = (server.address() as net.AddressInfo).port;
	return {
		port,
		freeze() {
			frozen = true;
		},
		async close() {
			for (const sk of sockets) sk.destroy();
			await new Promise((r) => server.close(r));
		},
	};
}

describe('the LISTEN connection', () => {
	const url = new URL(DATABASE_URL);
	// The test server's URL (its password too: the embedded Postgres of a bare machine has one),
	// pointed at the proxy.
	const config = (port: number) => {
		const through = new URL(DATABASE_URL);
		through.hostname = '127.0.0.1';
		through.port = String(port);
		if (!through.username) through.username = 'postgres';
		return { connectionString: through.toString(), schema: 'ol_any', connectTimeoutMs: 500 };
	};

	it('connecting to a server that never answers gives up within the connection timeout', async () => {
		const proxy = await freezableProxy(url);
		proxy.freeze();
		try {
			const t0 = Date.now();
			const err = await connectListener(config(proxy.port)).catch((e: unknown) => e);
			expect(err).toBeInstanceOf(Error);
			expect(Date.now() - t0).toBeLessThan(2_500);
		} finally {
			await proxy.close();
		}
	});

	/** A LISTEN connection through a proxy that goes silent right after LISTEN `channel`; `fn` gets it. */
	async function silentListener(channel: string, fn: (conn: Awaited<ReturnType<typeof connectListener>>, lost: Array<Error | undefined>) => Promise<void>) {
		const proxy = await freezableProxy(url);
		try {
			const conn = await connectListener(config(proxy.port));
			const lost: Array<Error | undefined> = [];
			conn.onLost((e) => lost.push(e));
			await conn.listen(channel);
			proxy.freeze();
			await fn(conn, lost);
		} finally {
			await proxy.close();
		}
	}

	it('on a connection that went silent, LISTEN gives up within the connection timeout and the connection counts as lost', async () => {
		await silentListener('oplq_bounds_a', async (conn, lost) => {
			const t0 = Date.now();
			await expect(conn.listen('oplq_bounds_b')).rejects.toThrow(/LISTEN did not finish within the connection timeout \(500 ms\)/);
			expect(Date.now() - t0).toBeLessThan(2_000);
			// The socket was destroyed: the watcher hears of it through onLost and reconnects.
			await waitFor(() => lost.length > 0, { what: 'onLost after the destroyed socket', timeoutMs: 1000 });
			expect(lost.length).toBeGreaterThanOrEqual(1);
			await conn.close();
		});
	});

	it('closing a connection whose peer went silent ends within the connection timeout (the socket is destroyed)', async () => {
		await silentListener('oplq_bounds_c', async (conn) => {
			const t0 = Date.now();
			await conn.close();
			const ms = Date.now() - t0;
			expect(ms).toBeGreaterThanOrEqual(400);
			expect(ms).toBeLessThan(2_000);
		});
	});
});
