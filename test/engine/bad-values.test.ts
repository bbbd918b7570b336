/**
 * Issue 23: a bad value fails its own item only, in n8n's real engine (WorkflowExecute, the built
 * nodes from dist/). Before, each of these failed the whole batch in Postgres (every item on
 * Unrecorded, the good ones not recorded): Fail with an error message whose 10,000-unit cut fell
 * inside a surrogate pair or that carried a lone surrogate (22P02); Enqueue with Not Before
 * `+200000-01-01T00:00:00Z` or `0000-01-01T00:00:00Z` (22008/22009); a task id beyond the bigint
 * range (22003).
 */
import type { INode } from 'n8n-workflow';
import { closeAllPools as closeSrcPools } from '../../src/db/pool';
import { enqueue } from '../../src/queue';
import { DATABASE_URL, testDatabase } from '../helpers/db';
import { testCredentials } from '../helpers/fakeExecute';
import { Engine, PKG, ROOT, connect, node, sink, source } from './harness';

jest.setTimeout(60_000);

const EMOJI = '\u{1F600}';
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

let db: Awaited<ReturnType<typeof testDatabase>>;
let engine: Engine;

beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_engine_badval' });
	engine = new Engine({ credentials: { ok: testCredentials(DATABASE_URL, db.schema) as never } });
});
afterAll(async () => {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	await (require(`${ROOT}/dist/src/db/pool.js`) as { closeAllPools(): Promise<void> }).closeAllPools();
	await closeSrcPools();
	await db.drop();
});

const q = async <T = Record<string, unknown>>(sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows as T[];

function dq(name: string, parameters: INode['parameters']): INode {
	return node(name, `${PKG}.priorityDequeue`, parameters, { typeVersion: 1, credentials: { operationLedgerPostgresApi: { id: 'ok', name: 'ok' } }, onError: 'continueRegularOutput' });
}

/** Source → Dequeue (claims the queue's tasks) → `ut`, with ut's two outputs in sinks. */
async function afterDequeue(queue: string, sourceItem: object, ut: INode) {
	const nodes = [source([sourceItem]), dq('Dequeue', { resource: 'task', operation: 'dequeue', queue, batchSize: 10, leaseSeconds: 300, options: {} }), { ...ut, name: 'UT' }, sink('Unrecorded'), sink('Result')];
	return engine.run(nodes, connect({ Source: [['Dequeue']], Dequeue: [[], ['UT']], UT: [['Unrecorded'], ['Result']] }));
}

it('Fail: a message cut inside a surrogate pair, one with a lone surrogate and a NUL, and a plain one are all recorded', async () => {
	const queue = 'badval-fail';
	await enqueue(db.pool, db.ledgerSchema, [0, 1, 2].map((n) => ({ queue, group: 'normal', payload: { n } })));
	const msgs = ['a'.repeat(9999) + EMOJI + 'tail', `lone \uD800 here and a NUL \u0000 there`, 'plain failure'];
	const fail = dq('UT', {
		resource: 'task',
		operation: 'fail',
		taskSource: 'explicit',
		taskId: '={{ $json.taskId }}',
		leaseToken: '={{ $json.leaseToken }}',
		errorMessage: "={{ $('Source').first().json.msgs[$json.payload.n] }}",
		options: { backoffBaseSeconds: 5, backoffCapSeconds: 60 },
	});
	const { received } = await afterDequeue(queue, { msgs }, fail);
	expect(received.Unrecorded ?? []).toEqual([]);
	expect(received.Result.map((i) => i.json.outcome)).toEqual(['retry_scheduled', 'retry_scheduled', 'retry_scheduled']);
	const rows = await q<{ n: number; e: string }>(`SELECT (payload->>'n')::int AS n, last_error AS e FROM ${db.schemaSql}.queue_tasks WHERE queue = $1 ORDER BY 1`, [queue]);
	expect(rows[0].e).toBe('a'.repeat(9999));
	expect(rows[1].e).toBe('lone \uFFFD here and a NUL \uFFFD there');
	expect(rows[2].e).toBe('plain failure');
	for (const r of rows) expect(LONE.test(r.e)).toBe(false);
});

it('Enqueue: Not Before beyond Postgres\' range (+200000, year 0) fails those items only; the good one is enqueued', async () => {
	const queue = 'badval-notbefore';
	const nodes = [
		source([{ nb: '+200000-01-01T00:00:00Z' }, { nb: '0000-01-01T00:00:00Z' }, { nb: '2030-01-01T00:00:00Z' }, { nb: '-000001-06-01T00:00:00Z' }]),
		dq('UT', { resource: 'task', operation: 'enqueue', queue, priorityGroup: 'normal', payload: '={{ JSON.stringify($json) }}', dedupeKey: '', options: { notBefore: '={{ $json.nb }}' } }),
		sink('Unrecorded'),
		sink('Result'),
	];
	const { received } = await engine.run(nodes, connect({ Source: [['UT']], UT: [['Unrecorded'], ['Result']] }));
	// (The sinks' pairedItem is the engine's own numbering of their outputs, so each item is told by its message.)
	expect(received.Unrecorded.map((i) => /got "([^"]*)"/.exec(String(i.json.error))?.[1])).toEqual(['+200000-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '-000001-06-01T00:00:00Z']);
	for (const i of received.Unrecorded) {
		expect(i.json.error).toMatch(/Not before must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z/);
		expect(i.json.retryable).toBe(false);
	}
	expect(received.Result).toHaveLength(1);
	expect(received.Result[0].json.availableAt).toBe('2030-01-01T00:00:00.000Z');
	expect(await q(`SELECT payload->>'nb' AS nb FROM ${db.schemaSql}.queue_tasks WHERE queue = $1`, [queue])).toEqual([{ nb: '2030-01-01T00:00:00Z' }]);
});

it('Complete: a task id beyond the bigint range fails its own item; the other task is completed', async () => {
	const queue = 'badval-taskid';
	await enqueue(db.pool, db.ledgerSchema, [0, 1].map((n) => ({ queue, group: 'normal', payload: { n } })));
	const complete = dq('UT', {
		resource: 'task',
		operation: 'complete',
		taskSource: 'explicit',
		taskId: "={{ $json.payload.n === 0 ? '9223372036854775808' : $json.taskId }}",
		leaseToken: '={{ $json.leaseToken }}',
		options: {},
	});
	const { received } = await afterDequeue(queue, {}, complete);
	expect(received.Unrecorded).toHaveLength(1);
	expect(received.Unrecorded[0].json.error).toMatch(/Task ID must be a positive integer up to 9223372036854775807/);
	expect(received.Result.map((i) => i.json.outcome)).toEqual(['completed']);
});
