/**
 * Late settles: every settle from a superseded lease gets lease_lost with leaseLost true
 * and a detail that says what happened; a lease's own repeat gets already_settled. The table in
 * docs/queue.md ("Late settles") is checked row by row against queue_settle_verdict, and the main
 * rows are driven through real calls.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { complete, dequeue, extendLease, fail, purge, release, requeueDead, type ClaimedTask, type SettleResult } from '../../../src/queue';
import { advanceQueueClock, setQueueClock, queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(6);
});
// The queue clock is the schema's: a test that moved it leaves it as it found it.
afterEach(() => setQueueClock(db.pool, db.schema, 0));
afterAll(async () => {
	await db.drop();
});

const OPS = ['complete', 'fail', 'release', 'extend'] as const;

interface TableRow {
	where: string;
	status: string | null;
	leaseEnd: string | null;
	token: string | null;
	deadReason: string | null;
	outcomes: Record<(typeof OPS)[number], string>;
	detail: string;
}

/** The rows between the late-settle-table markers of docs/queue.md. */
function docsTable(): TableRow[] {
	const md = readFileSync(path.join(__dirname, '../../../docs/queue.md'), 'utf8');
	const start = md.indexOf('<!-- late-settle-table:start -->');
	const end = md.indexOf('<!-- late-settle-table:end -->');
	expect(start).toBeGreaterThan(0);
	expect(end).toBeGreaterThan(start);
	const lines = md
		.slice(start, end)
		.split('\n')
		.filter((l) => l.startsWith('|'));
	const dash = (v: string) => (v === '—' ? null : v);
	return lines.slice(2).map((l) => {
		const c = l.split('|').slice(1, -1).map((x) => x.trim());
		expect(c).toHaveLength(10);
		return {
			where: c[0],
			status: dash(c[1]),
			leaseEnd: dash(c[2]),
			token: dash(c[3]),
			deadReason: dash(c[4]),
			outcomes: { complete: c[5], fail: c[6], release: c[7], extend: c[8] },
			detail: c[9],
		};
	});
}

/** The detail's fixed beginning: the text before the first "…". */
const prefix = (d: string) => d.split('…')[0].trimEnd();

async function settleAll(t: ClaimedTask): Promise<Record<(typeof OPS)[number], SettleResult>> {
	return {
		complete: (await complete(db.pool, db.ledgerSchema, [{ ...t, result: { late: true } }]))[0],
		fail: (await fail(db.pool, db.ledgerSchema, [{ ...t, error: 'late failure' }]))[0],
		release: (await release(db.pool, db.ledgerSchema, [t]))[0],
		extend: (await extendLease(db.pool, db.ledgerSchema, [{ ...t, leaseSeconds: 60 }]))[0],
	};
}

async function row(id: string) {
	const { rows } = await db.pool.query(`SELECT * FROM "${db.schema}".queue_tasks WHERE id = $1`, [id]);
	return rows[0];
}

function expectAll(res: Record<string, SettleResult>, outcome: string, detail: RegExp) {
	for (const op of OPS) {
		expect({ op, outcome: res[op].outcome, leaseLost: res[op].leaseLost }).toEqual({ op, outcome, leaseLost: outcome !== 'already_settled' });
		expect(res[op].detail).toMatch(detail);
	}
}

describe('late settles', () => {
	test('docs/queue.md table = queue_settle_verdict, every row and caller', async () => {
		const rows = docsTable();
		expect(rows.length).toBeGreaterThanOrEqual(20);
		const seen = new Set<string>();
		for (const r of rows) {
			const me = randomUUID();
			const onRow = r.token === 'this' ? me : r.token === 'other' ? randomUUID() : null;
			for (const op of OPS) {
				const { rows: out } = await db.pool.query(
					`SELECT * FROM "${db.schema}".queue_settle_verdict($1, $2::uuid, $3, $4, $5::uuid, $6, now() - interval '1 second', 2, 3, $7)`,
					[op, me, r.where === 'hot' ? 'live' : r.where === 'none' ? null : r.where, r.status, onRow, r.leaseEnd, r.deadReason],
				);
				const label = `${r.where}/${r.status}/${r.leaseEnd}/${r.token}/${op}`;
				expect({ label, outcome: out[0].outcome }).toEqual({ label, outcome: r.outcomes[op] });
				expect({ label, detail: (out[0].detail as string).startsWith(prefix(r.detail)) }).toEqual({ label, detail: true });
				seen.add(out[0].outcome);
			}
		}
		expect([...seen].sort()).toEqual(['already_settled', 'lease_lost', 'not_found']);
	});

	test('a 1 s lease swept back to pending; the late Complete, Fail, Release, Extend all get lease_lost "expired and requeued"', async () => {
		const queue = db.queueName('swept');
		await db.fill(queue, 'high', 1, { maxAttempts: 3 });
		const [a] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 });
		await advanceQueueClock(db.pool, db.schema, 1.2);
		// Not swept yet.
		expectAll(await settleAll(a), 'lease_lost', /^lease expired at .* \(not swept yet\)/);
		await db.pool.query(`SELECT "${db.schema}".queue_expire_leases($1)`, [queue]);
		const before = await row(a.taskId);
		expect(before).toMatchObject({ status: 'pending', lease_end: 'expired', attempts: 1 });
		expectAll(await settleAll(a), 'lease_lost', /^lease expired and the task was requeued \(attempt 1 of 3 used\)/);
		expect(await row(a.taskId)).toEqual(before);
		// Re-claimed by B: A is told so; B's lease is untouched.
		const [b] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 60 });
		expect(b.taskId).toBe(a.taskId);
		expectAll(await settleAll(a), 'lease_lost', /^re-claimed by another lease \(attempt 2 of 3\)/);
		const [done] = await complete(db.pool, db.ledgerSchema, [b]);
		expect(done.outcome).toBe('completed');
		expectAll(await settleAll(a), 'lease_lost', /^re-claimed by another lease, which completed it/);
		// B's own repeats: already_settled (extend: lease_lost, a settled lease cannot be extended).
		const again = await settleAll(b);
		for (const op of ['complete', 'fail', 'release'] as const) expect(again[op]).toMatchObject({ outcome: 'already_settled', leaseLost: false });
		expect(again.extend).toMatchObject({ outcome: 'lease_lost', leaseLost: true });
		expect(again.complete.detail).toMatch(/^this lease already completed the task/);
	});

	test('lease expired at max attempts: dead, then archived, then requeued by hand: always lease_lost with what happened', async () => {
		const queue = db.queueName('dead');
		await db.fill(queue, 'high', 1, { maxAttempts: 1 });
		const [a] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 });
		await advanceQueueClock(db.pool, db.schema, 1.2);
		expect(await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1 })).toHaveLength(0); // sweeps
		expect(await row(a.taskId)).toMatchObject({ status: 'dead', dead_reason: 'lease_expired_at_max', lease_end: 'expired' });
		expectAll(await settleAll(a), 'lease_lost', /^lease expired and the task is dead \(lease_expired_at_max, 1 of 1 attempts\)$/);
		const [rq] = await requeueDead(db.pool, db.ledgerSchema, { queue, taskIds: [a.taskId] });
		expect(rq.outcome).toBe('requeued');
		expectAll(await settleAll(a), 'lease_lost', /^the task went dead and was requeued by hand; it is pending now/);
		// Dead again and purged into the archive.
		const [b] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 1 });
		await advanceQueueClock(db.pool, db.schema, 1.2);
		await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1 });
		await purge(db.pool, db.ledgerSchema, { queue, deadAfterSeconds: 0 });
		expect(await row(b.taskId)).toBeUndefined();
		expectAll(await settleAll(b), 'lease_lost', /^lease expired and the task is dead \(lease_expired_at_max, 1 of 1 attempts\), archived/);
		expectAll(await settleAll(a), 'lease_lost', /^re-claimed by another lease; the task is dead now \(lease_expired_at_max\), archived/);
	});

	test("a lease's own fail / release / give up, repeated: already_settled; another caller: lease_lost", async () => {
		const queue = db.queueName('own');
		await db.fill(queue, 'high', 3, { maxAttempts: 2 });
		const [x, y, z] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 3, leaseSeconds: 60, agingSeconds: 0 });
		expect((await fail(db.pool, db.ledgerSchema, [{ ...x, error: 'boom' }]))[0].outcome).toBe('retry_scheduled');
		expect((await release(db.pool, db.ledgerSchema, [y]))[0].outcome).toBe('released');
		expect((await fail(db.pool, db.ledgerSchema, [{ ...z, error: 'stop', giveUp: true }]))[0].outcome).toBe('dead');
		const rx = await settleAll(x);
		expect(rx.fail).toMatchObject({ outcome: 'already_settled', leaseLost: false, detail: 'this lease already failed the task (now pending)' });
		expect(rx.extend).toMatchObject({ outcome: 'lease_lost', leaseLost: true });
		expect((await settleAll(y)).release).toMatchObject({ outcome: 'already_settled', detail: 'this lease already released the task (now pending)' });
		expect((await settleAll(z)).complete).toMatchObject({ outcome: 'already_settled', detail: 'this lease already gave up on the task (now dead)' });
		const stranger = { ...x, leaseToken: randomUUID() };
		expectAll(await settleAll(stranger), 'lease_lost', /^re-claimed by another lease, which failed it; the task is pending again/);
		const nobody = { ...x, taskId: '987654321' };
		const res = await settleAll(nobody);
		for (const op of OPS) expect(res[op]).toMatchObject({ outcome: 'not_found', leaseLost: true, detail: 'no task with this id' });
	});
});
