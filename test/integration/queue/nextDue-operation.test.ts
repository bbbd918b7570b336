/**
 * Priority Dequeue's Next Due operation (resource Queue), the operation CONTRIBUTING.md's recipe
 * was followed for: it answers from the database (queue_next_due), is read-only, and bad input is
 * an item on Unrecorded.
 */
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { enqueue } from '../../../src/queue';
import { closeAllPools } from '../../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { fakeExecute, testCredentials } from '../../helpers/fakeExecute';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_nextdue' });
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

const node = new PriorityDequeue();
function run(queue: unknown, continueOnFail = false) {
	return node.execute.call(
		fakeExecute({ items: [{ json: {} }], params: { resource: 'queue', operation: 'nextDue', queue }, credentials: testCredentials(DATABASE_URL, db.schema), continueOnFail }),
	);
}
const count = async () => Number((await db.pool.query(`SELECT count(*) AS n FROM "${db.schema}".queue_tasks`)).rows[0].n);

describe('Priority Dequeue: Next Due', () => {
	it('the operation is listed under resource Queue, derived from the router map', () => {
		const lists = node.description.properties.filter((p) => p.name === 'operation');
		const queueList = lists.find((p) => p.displayOptions?.show?.resource?.[0] === 'queue');
		expect((queueList?.options as Array<{ value: string }>).map((o) => o.value)).toEqual(['nextDue', 'pause', 'purge', 'resume', 'stats']);
	});

	it('an empty queue has nothing due; a delayed task is due at its time; a ready task is due now', async () => {
		const [notRecorded, [empty]] = await run('nd-a');
		expect(notRecorded).toEqual([]);
		expect(empty.json).toEqual({ queue: 'nd-a', dueAt: null, due: false, inMs: null });

		await enqueue(db.pool, db.ledgerSchema, [{ queue: 'nd-a', group: 'high', delaySeconds: 3600 }]);
		const [, [later]] = await run('nd-a');
		expect(later.json.due).toBe(false);
		expect(later.json.inMs as number).toBeGreaterThan(3500_000);
		expect(later.json.inMs as number).toBeLessThanOrEqual(3600_000);
		const runAt = (await db.pool.query(`SELECT run_at FROM "${db.schema}".queue_tasks WHERE queue = 'nd-a'`)).rows[0].run_at as Date;
		expect(later.json.dueAt).toBe(runAt.toISOString());

		await enqueue(db.pool, db.ledgerSchema, [{ queue: 'nd-a', group: 'low' }]);
		const before = await count();
		const [, [now]] = await run('nd-a');
		expect(now.json).toMatchObject({ queue: 'nd-a', due: true, inMs: 0 });
		expect(await count()).toBe(before); // read-only: nothing claimed or added
		expect((await db.pool.query(`SELECT count(*) AS n FROM "${db.schema}".queue_tasks WHERE status <> 'pending'`)).rows[0].n).toBe('0');
	});

	it('a bad queue name is an item on Unrecorded (continueOnFail) and reaches no database call', async () => {
		const [notRecorded, result] = await run('', true);
		expect(result).toEqual([]);
		expect(notRecorded).toHaveLength(1);
		expect(String(notRecorded[0].json.error)).toMatch(/Queue name/);
	});
});
