/**
 * Leases and fencing: no task is handed to two holders while a lease is live; a killed consumer's
 * tasks come back after the lease and count an attempt; a late settle from a lost lease changes nothing.
 */
import { complete, dequeue, extendLease, fail, release, stats, type ClaimedTask } from '../../../src/queue';
import { advanceQueueClock, setQueueClock, queueTestDb, type QueueTestDb } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(12);
});
// The queue clock is the schema's: a test that moved it leaves it as it found it.
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await db.drop();
});

async function row(id: string) {
	const { rows } = await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE id = $1`, [id]);
	return rows[0];
}

describe('leases', () => {
	test('10,000 tasks, random concurrent claims: never two holders while a lease is live', async () => {
		const queue = db.queueName('many');
		await db.fill(queue, 'high', 5000);
		await db.fill(queue, 'normal', 3000);
		await db.fill(queue, 'low', 2000);
		const claims: Array<ClaimedTask & { claimedAtMs: number; leaseMs: number }> = [];
		let completed = 0;
		let settleErrors = 0;
		const consumer = async () => {
			for (;;) {
				// Some consumers "die" (1 s lease, never settle); most complete with a long lease.
				const dies = Math.random() < 0.1;
				const leaseSeconds = dies ? 1 : 120;
				const got = await dequeue(db.pool, db.ledgerSchema, {
					queue,
					limit: 1 + Math.floor(Math.random() * 60),
					leaseSeconds,
					agingSeconds: 0,
				});
				if (got.length === 0) {
					const s = await stats(db.pool, db.ledgerSchema, queue);
					if (s.depth === 0 && s.inFlight === 0 && s.expiredLeases === 0) return;
					// Nothing claimable now: wait (on the database's own clock, which this test races
					// claims against) until a task is ready again, a dead consumer's 1 s lease has run
					// out, or the queue drained.
					await waitFor(
						async () => {
							const x = await stats(db.pool, db.ledgerSchema, queue);
							return x.ready > 0 || x.expiredLeases > 0 || (x.depth === 0 && x.inFlight === 0);
						},
						{ what: "a claimable task (ready, or a dead consumer's lease run out) or the queue drained", timeoutMs: 30_000, intervalMs: 50 },
					);
					continue;
				}
				for (const t of got) {
					const expires = Date.parse(t.leaseExpiresAt);
					claims.push({ ...t, claimedAtMs: expires - leaseSeconds * 1000, leaseMs: leaseSeconds * 1000 });
				}
				if (dies) continue;
				const res = await complete(db.pool, db.ledgerSchema, got);
				for (const r of res) {
					if (r.outcome === 'completed') completed++;
					else settleErrors++;
				}
			}
		};
		await Promise.all(Array.from({ length: 8 }, consumer));

		expect(completed).toBe(10_000);
		expect(settleErrors).toBe(0);
		// Per task: each claim starts only after the previous holder's lease ended (database clock).
		const byTask = new Map<string, typeof claims>();
		for (const c of claims) byTask.set(c.taskId, [...(byTask.get(c.taskId) ?? []), c]);
		expect(byTask.size).toBe(10_000);
		let reclaimed = 0;
		for (const list of byTask.values()) {
			list.sort((a, b) => a.attempt - b.attempt);
			list.forEach((c, i) => {
				expect(c.attempt).toBe(i + 1);
				if (i > 0) {
					reclaimed++;
					expect(c.claimedAtMs).toBeGreaterThanOrEqual(Date.parse(list[i - 1].leaseExpiresAt));
				}
			});
		}
		expect(reclaimed).toBeGreaterThan(0);
		const { rows } = await db.pool.query(
			`SELECT count(*)::int AS n FROM "${db.schema}".queue_tasks_archive WHERE queue = $1 AND status = 'succeeded'`,
			[queue],
		);
		expect(rows[0].n).toBe(10_000);
	}, 90_000);

	test("a killed consumer's tasks come back after the lease and count an attempt", async () => {
		const queue = db.queueName('killed');
		await db.fill(queue, 'normal', 5);
		const first = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 1 });
		expect(first).toHaveLength(5);
		expect(first.every((t) => t.attempt === 1)).toBe(true);
		// While the leases are live nobody else gets them.
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 1 })).toHaveLength(0);
		expect((await stats(db.pool, db.ledgerSchema, queue)).inFlight).toBe(5);
		await advanceQueueClock(db.pool, db.schema, 1.3);
		expect((await stats(db.pool, db.ledgerSchema, queue)).expiredLeases).toBe(5);
		const second = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 10, leaseSeconds: 60 });
		expect(second.map((t) => t.taskId).sort()).toEqual(first.map((t) => t.taskId).sort());
		expect(second.every((t) => t.attempt === 2)).toBe(true);
		expect(second.every((t) => t.lastError === 'lease expired (attempt 1 of 5)')).toBe(true);
		expect(new Set(second.map((t) => t.leaseToken)).size).toBe(5);
		expect(second.some((t) => first.some((f) => f.leaseToken === t.leaseToken))).toBe(false);
	});

	test('a lease that expires at max attempts sends the task dead with the reason', async () => {
		const queue = db.queueName('expire-dead');
		await db.fill(queue, 'high', 1, { maxAttempts: 1 });
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 });
		await advanceQueueClock(db.pool, db.schema, 1.3);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 })).toHaveLength(0);
		const r = await row(t.taskId);
		expect(r.status).toBe('dead');
		expect(r.last_error).toBe('lease expired at max attempts (1 of 1)');
	});

	test('a late complete from a lost lease changes nothing and says so', async () => {
		const queue = db.queueName('late');
		await db.fill(queue, 'high', 1);
		const [old] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 });
		await advanceQueueClock(db.pool, db.schema, 1.3);
		// Expired but not yet handed out again: still refused, row unchanged.
		const before = await row(old.taskId);
		const [early] = await complete(db.pool, db.ledgerSchema, [old]);
		expect(early.outcome).toBe('lease_lost');
		expect(early.leaseLost).toBe(true);
		expect(early.detail).toMatch(/lease expired/);
		expect(await row(old.taskId)).toEqual(before);

		const [fresh] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		expect(fresh.taskId).toBe(old.taskId);
		const held = await row(old.taskId);
		for (const late of [
			(await complete(db.pool, db.ledgerSchema, [{ ...old, result: { late: true } }]))[0],
			(await fail(db.pool, db.ledgerSchema, [{ ...old, error: 'late failure' }]))[0],
			(await extendLease(db.pool, db.ledgerSchema, [{ ...old, leaseSeconds: 600 }]))[0],
			(await release(db.pool, db.ledgerSchema, [old]))[0],
		]) {
			expect(late.outcome).toBe('lease_lost');
			expect(late.status).toBe('processing');
			expect(late.detail).toMatch(/re-claimed by another lease/);
		}
		expect(await row(old.taskId)).toEqual(held);
		const [done] = await complete(db.pool, db.ledgerSchema, [fresh]);
		expect(done.outcome).toBe('completed');
		// Repeating the same complete is harmless; the old token still changes nothing.
		expect((await complete(db.pool, db.ledgerSchema, [fresh]))[0].outcome).toBe('already_settled');
		expect((await complete(db.pool, db.ledgerSchema, [old]))[0].outcome).toBe('lease_lost');
	});

	test('extend lease keeps the task held past its first lease', async () => {
		const queue = db.queueName('extend');
		await db.fill(queue, 'high', 1);
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 });
		const [ext] = await extendLease(db.pool, db.ledgerSchema, [{ ...t, leaseSeconds: 60 }]);
		expect(ext.outcome).toBe('extended');
		expect(Date.parse(ext.leaseExpiresAt as string)).toBeGreaterThan(Date.parse(t.leaseExpiresAt));
		await advanceQueueClock(db.pool, db.schema, 1.3);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 })).toHaveLength(0);
		expect((await complete(db.pool, db.ledgerSchema, [t]))[0].outcome).toBe('completed');
	});

	test('release gives the task back at the head without counting the attempt', async () => {
		const queue = db.queueName('release');
		const ids = await db.fill(queue, 'high', 3);
		const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		expect(t.taskId).toBe(ids[0]);
		const [rel] = await release(db.pool, db.ledgerSchema, [t]);
		expect(rel.outcome).toBe('released');
		expect(rel.attempts).toBe(0);
		const [again] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		expect(again.taskId).toBe(ids[0]);
		expect(again.attempt).toBe(1);
		// Released with a delay and counted: not claimable until then.
		const [rel2] = await release(db.pool, db.ledgerSchema, [{ ...again, delaySeconds: 3600, countAttempt: true }]);
		expect(rel2.attempts).toBe(1);
		const next = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 5, leaseSeconds: 60 });
		expect(next.map((x) => x.taskId)).toEqual([ids[1], ids[2]]);
	});

	test('a claim skips a row another transaction holds, fills its batch from the others, and keeps the order', async () => {
		const queue = db.queueName('held-row');
		const high = await db.fill(queue, 'high', 6);
		await db.fill(queue, 'normal', 6);
		await db.fill(queue, 'low', 6);
		const tx = await db.pool.connect();
		try {
			await tx.query('BEGIN');
			// Something else (a repair script, a settle in flight) holds the head of "high".
			await tx.query(`SELECT 1 FROM "${db.schema}".queue_tasks WHERE id = $1 FOR UPDATE`, [high[0]]);
			const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 8, leaseSeconds: 60, agingSeconds: 0 });
			expect(got).toHaveLength(8);
			expect(got.map((t) => t.taskId)).not.toContain(high[0]);
			// The usual tag order without it, FIFO from the next high task. Tags (docs/queue.md,
			// "Scheduling"): high .2 .4 ... 1.2; normal and low were enqueued when the queue's virtual
			// time was .2 (high's head): normal .7 1.2 ..., low 1.2 ...; ties by id.
			expect(got.map((t) => t.group[0]).join('')).toBe('hhnhhhnl');
			expect(got.filter((t) => t.group === 'high').map((t) => t.taskId)).toEqual(high.slice(1, 6));
			const seqs = got.map((t) => Number(t.claimSeq));
			seqs.forEach((s, i) => i > 0 && expect(s).toBeGreaterThan(seqs[i - 1]));
			await tx.query('ROLLBACK');
		} finally {
			tx.release();
		}
		const [next] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60, agingSeconds: 0 });
		expect(next.taskId).toBe(high[0]);
	});

	test('claims racing completes and releases: a task is only handed out again after its holder let go', async () => {
		const queue = db.queueName('race');
		await db.fill(queue, 'high', 150);
		await db.fill(queue, 'normal', 100);
		await db.fill(queue, 'low', 50);
		const released = new Set<string>(); // lease tokens whose release succeeded
		const claims: ClaimedTask[] = [];
		let completed = 0;
		const consumer = async () => {
			for (;;) {
				const got = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1 + Math.floor(Math.random() * 5), leaseSeconds: 120, agingSeconds: 0 });
				if (got.length === 0) return;
				claims.push(...got);
				const giveBack = got.filter(() => Math.random() < 0.3);
				const finish = got.filter((t) => !giveBack.includes(t));
				// Settle both at once on two connections, racing the other consumers' claims.
				const [rel, done] = await Promise.all([release(db.pool, db.ledgerSchema, giveBack), complete(db.pool, db.ledgerSchema, finish)]);
				for (const r of rel) {
					expect(r.outcome).toBe('released');
					released.add(giveBack[r.index].leaseToken);
				}
				for (const r of done) expect(r.outcome).toBe('completed');
				completed += done.length;
			}
		};
		await Promise.all(Array.from({ length: 6 }, consumer));
		expect(completed).toBe(300);
		const byTask = new Map<string, ClaimedTask[]>();
		for (const c of claims) byTask.set(c.taskId, [...(byTask.get(c.taskId) ?? []), c]);
		expect(byTask.size).toBe(300);
		for (const list of byTask.values()) {
			list.sort((a, b) => Number(a.claimSeq) - Number(b.claimSeq));
			// Every claim but the last followed a successful release by its holder.
			list.slice(0, -1).forEach((c) => expect(released.has(c.leaseToken)).toBe(true));
			expect(released.has(list[list.length - 1].leaseToken)).toBe(false);
		}
		// Claim sequence numbers are unique (drawn from one sequence; gaps allowed).
		const seqs = claims.map((c) => Number(c.claimSeq));
		expect(new Set(seqs).size).toBe(seqs.length);
	}, 60_000);

	test('a lease expiring at max attempts goes dead exactly once, with several claimers sweeping at once', async () => {
		const queue = db.queueName('expire-dead-race');
		await db.fill(queue, 'high', 20, { maxAttempts: 1 });
		await db.fill(queue, 'low', 20, { maxAttempts: 2 });
		const first = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 40, leaseSeconds: 1, agingSeconds: 0 });
		expect(first).toHaveLength(40);
		await advanceQueueClock(db.pool, db.schema, 1.3);
		const again = (
			await Promise.all(Array.from({ length: 6 }, () => dequeue(db.pool, db.ledgerSchema, { queue, limit: 40, leaseSeconds: 60, agingSeconds: 0 })))
		).flat();
		// The low tasks had an attempt left: each handed out once more, as attempt 2.
		expect(again).toHaveLength(20);
		expect(new Set(again.map((t) => t.taskId)).size).toBe(20);
		expect(again.every((t) => t.group === 'low' && t.attempt === 2 && t.lastError === 'lease expired (attempt 1 of 2)')).toBe(true);
		const { rows } = await db.pool.query(
			`SELECT status, last_error, count(*)::int AS n FROM "${db.schema}".queue_tasks WHERE queue = $1 GROUP BY 1, 2 ORDER BY 1`,
			[queue],
		);
		expect(rows).toEqual([
			{ status: 'dead', last_error: 'lease expired at max attempts (1 of 1)', n: 20 },
			{ status: 'processing', last_error: 'lease expired (attempt 1 of 2)', n: 20 },
		]);
	});

	test('one complete call with completed, repeated, lost and unknown items answers each in input order', async () => {
		const queue = db.queueName('complete-mixed');
		await db.fill(queue, 'high', 3);
		const [a, b, c] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 3, leaseSeconds: 60 });
		const res = await complete(db.pool, db.ledgerSchema, [
			{ ...b, result: { n: 'b' } },
			{ ...a, leaseToken: '00000000-0000-0000-0000-000000000000' }, // wrong token, then the right one
			{ ...a, result: { n: 'a' } },
			{ ...b, result: { n: 'b again' } }, // same token twice
			{ taskId: '999999998', leaseToken: c.leaseToken },
			c,
		]);
		expect(res.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5]);
		expect(res.map((r) => r.outcome)).toEqual(['completed', 'lease_lost', 'completed', 'already_settled', 'not_found', 'completed']);
		expect(res[1].detail).toMatch(/re-claimed by another lease/);
		const { rows } = await db.pool.query(
			`SELECT id::text, result FROM "${db.schema}".queue_tasks_archive WHERE id = ANY($1::bigint[]) ORDER BY id`,
			[[a.taskId, b.taskId, c.taskId]],
		);
		expect(rows).toEqual([
			{ id: a.taskId, result: { n: 'a' } },
			{ id: b.taskId, result: { n: 'b' } },
			{ id: c.taskId, result: null },
		]);
	});

	test('malformed lease tokens and ids are refused before any write', async () => {
		await expect(complete(db.pool, db.ledgerSchema, [{ taskId: '1', leaseToken: 'nope' }])).rejects.toThrow(/Lease token/);
		await expect(complete(db.pool, db.ledgerSchema, [{ taskId: 'x', leaseToken: '00000000-0000-0000-0000-000000000000' }])).rejects.toThrow(
			/Task ID/,
		);
		const [nf] = await complete(db.pool, db.ledgerSchema, [{ taskId: '999999999', leaseToken: '00000000-0000-0000-0000-000000000000' }]);
		expect(nf.outcome).toBe('not_found');
	});
});
