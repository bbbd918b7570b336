/**
 * Safe arithmetic: every numeric parameter of the queue at its extremes (0, 1, the
 * largest accepted value, max int, huge, NaN, infinity) gives a result, or a clear refusal before
 * any write (InputError in TypeScript, SQLSTATE 22023 from the SQL functions), never a
 * numeric overflow (22003) or a datetime overflow (22008), and never a task out of its bounds.
 */
import { complete, dequeue, enqueue, extendLease, fail, listDead, purge, release, requeueDead, stats } from '../../../src/queue';
import { InputError } from '../../../src/errors';
import { queueTestDb, type QueueTestDb } from '../../helpers/db';

let db: QueueTestDb;
beforeAll(async () => {
	db = await queueTestDb(4);
});
afterAll(async () => {
	await db.drop();
});

const INT_MAX = 2147483647;
const HUGE = [INT_MAX, 2 ** 53, 1e300, Number.MAX_VALUE];

/** Runs fn; returns 'ok', 'input' (InputError) or the SQLSTATE. */
async function verdict(fn: () => Promise<unknown>): Promise<string> {
	try {
		await fn();
		return 'ok';
	} catch (e) {
		if (e instanceof InputError) return 'input';
		return (e as { code?: string }).code ?? `error: ${(e as Error).message}`;
	}
}

async function sql(text: string, params: unknown[]): Promise<string> {
	return verdict(() => db.pool.query(text.replaceAll('$S', `"${db.schema}"`), params));
}

describe('numeric parameters at their extremes', () => {
	test('TypeScript API: every extreme is a result or a InputError', async () => {
		const queue = db.queueName('ts');
		const seen: Record<string, string> = {};
		const put = async (label: string, fn: () => Promise<unknown>) => {
			seen[label] = await verdict(fn);
		};
		for (const v of [0, 1, 86_400, 31_536_000, -1, ...HUGE, NaN, Infinity]) {
			await put(`enqueue delay ${v}`, () => enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', delaySeconds: v }]));
			await put(`enqueue maxAttempts ${v}`, () => enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'high', maxAttempts: v }]));
			await put(`dequeue limit ${v}`, () => dequeue(db.pool, db.ledgerSchema, { queue, limit: v }));
			await put(`dequeue lease ${v}`, () => dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: v }));
			await put(`dequeue aging ${v}`, () => dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, agingSeconds: v }));
			await put(`dequeue weight ${v}`, () => dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, groups: [{ name: 'high', weight: v }] }));
			await put(`requeue limit ${v}`, () => requeueDead(db.pool, db.ledgerSchema, { queue, limit: v }));
			await put(`purge ages ${v}`, () => purge(db.pool, db.ledgerSchema, { queue, deadAfterSeconds: v, archiveAfterSeconds: v }));
			await put(`purge limit ${v}`, () => purge(db.pool, db.ledgerSchema, { queue, limit: v }));
			await put(`listDead ${v}`, () => listDead(db.pool, db.ledgerSchema, queue, v));
			const [t] = await dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, leaseSeconds: 600 });
			if (t) {
				await put(`extend ${v}`, () => extendLease(db.pool, db.ledgerSchema, [{ ...t, leaseSeconds: v }]));
				await put(`fail base ${v}`, () => fail(db.pool, db.ledgerSchema, [{ ...t, error: 'x' }], { baseSeconds: v, capSeconds: 31_536_000 }));
				await put(`fail cap ${v}`, () => fail(db.pool, db.ledgerSchema, [{ ...t, error: 'x' }], { baseSeconds: 86_400, capSeconds: v }));
				await put(`release delay ${v}`, () => release(db.pool, db.ledgerSchema, [{ ...t, delaySeconds: v }]));
				await complete(db.pool, db.ledgerSchema, [t]);
			}
		}
		await put('dequeue aging 1e-300', () => dequeue(db.pool, db.ledgerSchema, { queue, limit: 1, agingSeconds: 1e-300 }));
		await put('stats', () => stats(db.pool, db.ledgerSchema, queue));
		const bad = Object.entries(seen).filter(([, v]) => v !== 'ok' && v !== 'input');
		expect(bad).toEqual([]);
		// The boundaries themselves are accepted.
		expect(seen['dequeue lease 86400']).toBe('ok');
		expect(seen['dequeue aging 31536000']).toBe('ok');
		expect(seen['enqueue delay 31536000']).toBe('ok');
		expect(seen['dequeue aging 1e-300']).toBe('input');
	});

	test('SQL functions called directly: 22023 or a result, never 22003 / 22008', async () => {
		const queue = db.queueName('sql');
		const results: Record<string, string> = {};
		const vals = ['0', '1', '-1', '0.0005', '31536000', '31536001', String(INT_MAX), '1e300', '1.7e308', 'NaN', 'Infinity'];
		// An old task, so aging divides a long wait by the interval.
		await enqueue(db.pool, db.ledgerSchema, [{ queue, group: 'low' }, { queue, group: 'high' }]);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET run_at = now() - interval '200 years' WHERE queue = $1 AND priority_group = 'low'`, [queue]);
		for (const v of vals) {
			results[`claim lease ${v}`] = await sql(`SELECT * FROM $S.queue_claim($1, '{high,low}', '{1,1}', 1, $2::float8, 0)`, [queue, v]);
			results[`claim aging ${v}`] = await sql(`SELECT * FROM $S.queue_claim($1, '{high,low}', '{1,1}', 1, 1, $2::float8)`, [queue, v]);
			results[`fail base ${v}`] = await sql(`SELECT * FROM $S.queue_fail('[{"i":0,"id":1,"tok":"00000000-0000-0000-0000-000000000000"}]', $1::float8, 10)`, [v]);
			results[`release delay ${v}`] = await sql(
				`SELECT * FROM $S.queue_release(jsonb_build_array(jsonb_build_object('i',0,'id',1,'tok','00000000-0000-0000-0000-000000000000','delay',$1::float8)))`,
				[v],
			);
			results[`extend ${v}`] = await sql(
				`SELECT * FROM $S.queue_extend_lease(jsonb_build_array(jsonb_build_object('i',0,'id',1,'tok','00000000-0000-0000-0000-000000000000','secs',$1::float8)))`,
				[v],
			);
			results[`purge ${v}`] = await sql(`SELECT * FROM $S.queue_purge($1, $2::float8, $2::float8, 10)`, [queue, v]);
		}
		for (const n of ['0', '-1', String(INT_MAX)]) {
			results[`claim limit ${n}`] = await sql(`SELECT * FROM $S.queue_claim($1, '{high}', '{1}', $2::int, 1, 0)`, [queue, n]);
			results[`claim weight ${n}`] = await sql(`SELECT * FROM $S.queue_claim($1, '{high,low}', ARRAY[$2::int, $2::int], 5, 1, 1)`, [queue, n]);
			results[`requeue limit ${n}`] = await sql(`SELECT * FROM $S.queue_requeue_dead($1, NULL, NULL, $2::int)`, [queue, n]);
			results[`purge limit ${n}`] = await sql(`SELECT * FROM $S.queue_purge($1, 0, 0, $2::int)`, [queue, n]);
			results[`list dead ${n}`] = await sql(`SELECT * FROM $S.queue_list_dead($1, $2::int)`, [queue, n]);
		}
		// Counters at their top: requeues at max int does not overflow.
		// (A queue of its own: tasks of the loops above whose 1-second leases expired are pending again.)
		const maxQueue = db.queueName('max');
		const [t] = await enqueue(db.pool, db.ledgerSchema, [{ queue: maxQueue, group: 'high', maxAttempts: 1000 }]);
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET status = 'dead', dead_at = now(), requeues = $2 WHERE id = $1`, [t.taskId, INT_MAX]);
		results['requeue at max requeues'] = await sql(`SELECT * FROM $S.queue_requeue_dead($1, ARRAY[$2::bigint], NULL, 1)`, [maxQueue, t.taskId]);
		// Attempts 999 of 1000: backoff 2^998 is capped, never infinite.
		await db.pool.query(`UPDATE "${db.schema}".queue_tasks SET attempts = 999 WHERE id = $1`, [t.taskId]);
		const [c] = await dequeue(db.pool, db.ledgerSchema, { queue: maxQueue, limit: 1, groups: [{ name: 'high', weight: 1 }] });
		expect(c).toMatchObject({ taskId: t.taskId, attempt: 1000 });
		results['fail at attempt 1000'] = await verdict(() => fail(db.pool, db.ledgerSchema, [{ ...c, error: 'x' }], { baseSeconds: 86_400, capSeconds: 31_536_000 }));
		const bad = Object.entries(results).filter(([, v]) => v !== 'ok' && v !== '22023');
		expect(bad).toEqual([]);
		expect(results['claim lease 31536001']).toBe('22023');
		expect(results['claim aging 0.0005']).toBe('22023');
		expect(results['claim aging NaN']).toBe('22023');
		expect(results['claim lease 1']).toBe('ok');
	});
});
