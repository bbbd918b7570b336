/**
 * The SQL entry points refuse what the nodes refuse (issue 23, item 8): every bound a node checks
 * is checked by its function too, with the same numbers, so a direct call (psql, another client)
 * cannot store a lease of -3600 s or 10^9 s, a line feed or a zero-width space in a key. Each case
 * is tried on both sides: the node's check throws InputError and the function raises SQLSTATE
 * 22023; the value just inside the bound passes both. And the refused characters are the same
 * code points in SQL as in src/keyText.ts.
 */
import { Pool } from 'pg';
import { checkLeaseSeconds, checkOperationKey, checkOptionalKeyText, checkSettleSeconds } from '../../../src/ledger/validate';
import { checkClaimOptions } from '../../../src/ledger/reconcile/claim';
import { checkResolveOptions } from '../../../src/ledger/reconcile/resolve';
import { checkListOptions } from '../../../src/ledger/admin/list';
import { checkRetentionOptions } from '../../../src/ledger/admin/retention';
import { prepareSettleItem } from '../../../src/ledger/admin/settle';
import { checkGroupName, checkQueueName, prepareBackoff, prepareDequeueOptions, prepareEnqueueInput, prepareExtendLeaseInput, prepareReleaseInput } from '../../../src/queue';
import { preparePurgeOptions } from '../../../src/queue/purge';
import { prepareRequeueDeadOptions } from '../../../src/queue/requeueDead';
import { InputError } from '../../../src/errors';
import { REFUSED_RANGES } from '../../../src/keyText';
import { testDatabase } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
let pool: Pool;
let q: string;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_bounds' });
	pool = db.pool;
	q = db.schemaSql;
});
afterAll(async () => {
	await db.drop();
});

const FP = 'a'.repeat(64);
const TOKEN = '00000000-0000-4000-8000-000000000000';
const reserveItem = (over: Record<string, unknown>) => ({ i: 0, k: 'b:1', f: FP, a: 'sha256-jcs-rfc8785', t: null, l: 60, s: 120, r: {}, ...over });
const sqlOf: Record<string, (v: unknown) => [string, unknown[]]> = {
	'reserve: lease': (v) => [`SELECT * FROM ${q}.reserve_operations($1::jsonb, '{}')`, [JSON.stringify([reserveItem({ l: v })])]],
	'reserve: settle window': (v) => [`SELECT * FROM ${q}.reserve_operations($1::jsonb, '{}')`, [JSON.stringify([reserveItem({ s: v })])]],
	'reserve: operation key': (v) => [`SELECT * FROM ${q}.reserve_operations($1::jsonb, '{}')`, [JSON.stringify([reserveItem({ k: v })])]],
	'reserve: target': (v) => [`SELECT * FROM ${q}.reserve_operations($1::jsonb, '{}')`, [JSON.stringify([reserveItem({ t: v })])]],
	'confirm: operation key': (v) => [`SELECT * FROM ${q}.confirm_operations($1::jsonb, '{}')`, [JSON.stringify([{ i: 0, k: v, tok: TOKEN, o: 'failed', reason: 'x' }])]],
	'claim: limit': (v) => [`SELECT * FROM ${q}.reconcile_claim($1, 0, 60, NULL, '{}')`, [v]],
	'claim: extra settle delay': (v) => [`SELECT * FROM ${q}.reconcile_claim(10, $1, 60, NULL, '{}')`, [v]],
	'claim: claim seconds': (v) => [`SELECT * FROM ${q}.reconcile_claim(10, 0, $1, NULL, '{}')`, [v]],
	'resolve: max checks': (v) => [`SELECT * FROM ${q}.reconcile_resolve('[]', $1, 1, 60, '{}')`, [v]],
	'resolve: backoff base': (v) => [`SELECT * FROM ${q}.reconcile_resolve('[]', 5, $1, 86400, '{}')`, [v]],
	'resolve: backoff ceiling': (v) => [`SELECT * FROM ${q}.reconcile_resolve('[]', 5, 1, $1, '{}')`, [v]],
	'settle by hand: decided by': (v) => [`SELECT * FROM ${q}.ops_settle_by_hand($1::jsonb, '{}')`, [JSON.stringify([{ i: 0, k: 'b:none', d: 'happened', ref: 'x', reason: 'r', by: v }])]],
	'list: page size': (v) => [`SELECT ${q}.ops_list_operations('unknown', 0, NULL, $1, NULL, NULL)`, [v]],
	'health: days': (v) => [`SELECT ${q}.ops_health($1)`, [v]],
	'compact: older than days': (v) => [`SELECT * FROM ${q}.ops_compact_batch($1, 10, '{}')`, [v]],
	'enqueue: queue name': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: v, g: 'high', p: {} }])]],
	'enqueue: group': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: v, p: {} }])]],
	'enqueue: dedupe key': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, k: v }])]],
	'enqueue: max attempts': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, m: v }])]],
	'enqueue: delay': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, d: v }])]],
	'claim tasks: lease': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY['high'], ARRAY[5], 1, $1, 0)`, [v]],
	'claim tasks: queue name': (v) => [`SELECT * FROM ${q}.queue_claim($1, ARRAY['high'], ARRAY[5], 1, 30, 0)`, [v]],
	'claim tasks: group': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY[$1::text], ARRAY[5], 1, 30, 0)`, [v]],
	'extend lease: lease': (v) => [`SELECT * FROM ${q}.queue_extend_lease($1::jsonb)`, [JSON.stringify([{ i: 0, id: 1, tok: TOKEN, secs: v }])]],
	'fail: backoff base': (v) => [`SELECT * FROM ${q}.queue_fail('[]', $1, 600)`, [v]],
	'release: delay': (v) => [`SELECT * FROM ${q}.queue_release($1::jsonb)`, [JSON.stringify([{ i: 0, id: 1, tok: TOKEN, delay: v }])]],
	'requeue dead: limit': (v) => [`SELECT * FROM ${q}.queue_requeue_dead('bq', NULL, NULL, $1)`, [v]],
	'purge: limit': (v) => [`SELECT * FROM ${q}.queue_purge('bq', 60, NULL, $1)`, [v]],
	'list dead: limit': (v) => [`SELECT * FROM ${q}.queue_list_dead('bq', $1)`, [v]],
	'stats: queue name': (v) => [`SELECT * FROM ${q}.queue_stats($1)`, [v]],
	'next due: queue name': (v) => [`SELECT ${q}.queue_next_due($1)`, [v]],
	'wake state: group': (v) => [`SELECT * FROM ${q}.queue_wake_state('bq', ARRAY[$1::text])`, [v]],
};
const nodeOf: Record<string, (v: unknown) => unknown> = {
	'reserve: lease': (v) => checkLeaseSeconds(v),
	'reserve: settle window': (v) => checkSettleSeconds(v),
	'reserve: operation key': (v) => checkOperationKey(v),
	'reserve: target': (v) => checkOptionalKeyText(v, 'The target', 200),
	'confirm: operation key': (v) => checkOperationKey(v),
	'claim: limit': (v) => checkClaimOptions({ limit: v, claimSeconds: 60 }),
	'claim: extra settle delay': (v) => checkClaimOptions({ limit: 10, settleSeconds: v, claimSeconds: 60 }),
	'claim: claim seconds': (v) => checkClaimOptions({ limit: 10, claimSeconds: v }),
	'resolve: max checks': (v) => checkResolveOptions({ maxChecks: v, backoffBaseSeconds: 1, backoffMaxSeconds: 60 }),
	'resolve: backoff base': (v) => checkResolveOptions({ maxChecks: 5, backoffBaseSeconds: v, backoffMaxSeconds: 86400 }),
	'resolve: backoff ceiling': (v) => checkResolveOptions({ maxChecks: 5, backoffBaseSeconds: 1, backoffMaxSeconds: v }),
	'settle by hand: decided by': (v) => prepareSettleItem(0, { operationKey: 'b:none', decision: 'happened', externalRef: 'x', reason: 'r', decidedBy: v }),
	'list: page size': (v) => checkListOptions({ kind: 'unknown', limit: v }),
	'health: days': (v) => {
		if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 366) throw new InputError('Days of events'); // ledgerHealth's own check
	},
	'compact: older than days': (v) => checkRetentionOptions({ mode: 'compact', olderThanDays: v }),
	'enqueue: queue name': (v) => checkQueueName(v),
	'enqueue: group': (v) => checkGroupName(v),
	'enqueue: dedupe key': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, dedupeKey: v as string }),
	'enqueue: max attempts': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, maxAttempts: v as number }),
	'enqueue: delay': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, delaySeconds: v as number }),
	'claim tasks: lease': (v) => prepareDequeueOptions({ queue: 'bq', limit: 1, leaseSeconds: v as number }),
	'claim tasks: queue name': (v) => prepareDequeueOptions({ queue: v as string, limit: 1 }),
	'claim tasks: group': (v) => prepareDequeueOptions({ queue: 'bq', limit: 1, groups: [{ name: v as string, weight: 5 }] }),
	'extend lease: lease': (v) => prepareExtendLeaseInput({ taskId: '1', leaseToken: TOKEN, leaseSeconds: v as number }),
	'fail: backoff base': (v) => prepareBackoff({ baseSeconds: v as number, capSeconds: 600 }),
	'release: delay': (v) => prepareReleaseInput({ taskId: '1', leaseToken: TOKEN, delaySeconds: v as number }),
	'requeue dead: limit': (v) => prepareRequeueDeadOptions({ queue: 'bq', limit: v as number }),
	'purge: limit': (v) => preparePurgeOptions({ queue: 'bq', deadAfterSeconds: 60, limit: v as number }),
	'list dead: limit': (v) => {
		if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 1000) throw new InputError('Dead task limit'); // listDead's own check
	},
	'stats: queue name': (v) => checkQueueName(v),
	'next due: queue name': (v) => checkQueueName(v),
	'wake state: group': (v) => checkGroupName(v),
};
const long = (n: number, ch = 'x') => ch.repeat(n);
/** [case, values both sides refuse, values both sides accept]. */
const CASES: Array<[string, unknown[], unknown[]]> = [
	['reserve: lease', [-3600, 0, 0.5, 604801, 1e9], [1, 604800]],
	['reserve: settle window', [0, -1, 2592001, 1.5], [1, 2592000]],
	['reserve: operation key', ['a\nb', 'a\tb', 'pay_123\u200b', 'pay\u00a0123', ' pay', 'pay ', 'pay :1', long(513), 'a\u2028b', 'a\ufeffb'], ['pay_123', 'caf\u00e9', long(512), 'a b:c']],
	['reserve: target', ['a\nb', 'stripe\u200b', long(201), '\u{1F600}'.repeat(101)], [null, 'stripe', long(200), '\u{1F600}'.repeat(100)]],
	['confirm: operation key', ['a\nb', 'k\u200c'], ['k']],
	['claim: limit', [0, 1001], [1, 1000]],
	['claim: extra settle delay', [-1, 2592001], [0, 2592000]],
	['claim: claim seconds', [0, 86401], [1, 86400]],
	['resolve: max checks', [0, 1001], [1, 1000]],
	['resolve: backoff base', [0, 86401], [1, 86400]],
	['resolve: backoff ceiling', [0, 2592001], [1, 2592000]],
	['settle by hand: decided by', ['', ' ', long(201)], ['alice', long(200)]],
	['list: page size', [0, 1001], [1, 1000]],
	['health: days', [0, 367], [1, 366]],
	['compact: older than days', [0, 36501], [1, 36500]],
	['enqueue: queue name', ['', ' ', 'q\nx', 'q\u200b', long(201)], ['bq', long(200), 'Zürich']],
	['enqueue: group', ['', 'g\n', 'g\u00a0', long(101)], ['high', long(100)]],
	['enqueue: dedupe key', ['d\n', 'd\u200b', 'd\u00a0', long(513)], ['d-1', long(512)]],
	['enqueue: max attempts', [0, 1001, 1.5], [1, 1000]],
	['enqueue: delay', [-1, 31536001], [0, 31536000]],
	['claim tasks: lease', [-3600, 0, 0.5, 86401, 1e9], [1, 86400]],
	['claim tasks: queue name', ['q\n', ' ', 'q\u200b'], ['bq', 'Zürich']],
	['claim tasks: group', ['g\n', 'g\u3000'], ['high']],
	['extend lease: lease', [-3600, 0, 0.5, 86401, 1e9], [1, 86400]],
	['fail: backoff base', [-1, 86401], [0, 86400]],
	['release: delay', [-1, 31536001], [0, 31536000]],
	['requeue dead: limit', [0, 10001], [1, 10000]],
	['purge: limit', [0, 100001], [1, 100000]],
	['list dead: limit', [0, 1001], [1, 1000]],
	['stats: queue name', ['q\n', '', 'q\u200b'], ['bq']],
	['next due: queue name', ['q\r', ' '], ['bq']],
	['wake state: group', ['g\u00a0', ''], ['high']],
];

describe('every bound a node checks, its SQL entry point checks too', () => {
	const refused = CASES.flatMap(([name, bad]) => bad.map((v) => [name, JSON.stringify(v)?.slice(0, 60), v] as const));
	it.each(refused)('%s %s: the node and the function both refuse it', async (name, _label, v) => {
		expect(() => nodeOf[name](v)).toThrow(InputError);
		const [sql, params] = sqlOf[name](v);
		await expect(pool.query(sql, params)).rejects.toMatchObject({ code: '22023' });
	});
	const accepted = CASES.flatMap(([name, , good]) => good.map((v) => [name, JSON.stringify(v)?.slice(0, 60), v] as const));
	it.each(accepted)('%s %s: both take it', async (name, _label, v) => {
		expect(() => nodeOf[name](v)).not.toThrow();
		const [sql, params] = sqlOf[name](v);
		await expect(pool.query(sql, params)).resolves.toBeDefined();
	});

	it('the queue lease cap is one number: claim and extend lease take 86,400 s and refuse 86,400.5 s', async () => {
		for (const name of ['claim tasks: lease', 'extend lease: lease']) {
			await expect(pool.query(...sqlOf[name](86400))).resolves.toBeDefined();
			await expect(pool.query(...sqlOf[name](86400.5))).rejects.toMatchObject({ code: '22023' });
		}
	});

	it('a key not in Normalization Form C: the node normalises it (UAX #15), the function refuses it (no node sends one)', async () => {
		expect(checkOperationKey('cafe\u0301:1')).toBe('caf\u00e9:1');
		await expect(pool.query(...sqlOf['reserve: operation key']('cafe\u0301:1'))).rejects.toThrow(/not in Unicode Normalization Form C/);
		await expect(pool.query(...sqlOf['enqueue: dedupe key']('cafe\u0301'))).rejects.toMatchObject({ code: '22023' });
		await expect(pool.query(...sqlOf['reserve: operation key']('caf\u00e9:1'))).resolves.toBeDefined();
	});

	it('a refused value names itself and writes nothing', async () => {
		await expect(pool.query(...sqlOf['reserve: operation key']('pay_123\u200b'))).rejects.toThrow(
			/item 0: the operation key contains an invisible character \(U\+200B\) at character 8/,
		);
		await expect(pool.query(...sqlOf['reserve: lease'](-3600))).rejects.toThrow(/item 0: the lease \(seconds\) must be a whole number from 1 to 604800, got -3600/);
		const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${q}.operations WHERE operation_key LIKE 'pay%'`);
		expect(rows[0].n).toBe(1); // only the accepted 'pay_123' above
	});
});

describe('the refused characters are the same code points in SQL and in src/keyText.ts', () => {
	it('ol_refused_chars() matches exactly REFUSED_RANGES over every code point', async () => {
		const { rows } = await pool.query<{ c: number[] }>(
			`SELECT array_agg(c ORDER BY c) AS c FROM generate_series(1, 1114111) c
			  WHERE (c < 55296 OR c > 57343) AND chr(c) ~ ${q}.ol_refused_chars()`,
		);
		const expected: number[] = [];
		for (const [a, b] of REFUSED_RANGES) for (let c = Math.max(a, 1); c <= b; c++) expected.push(c);
		expect(rows[0].c).toEqual(expected);
	});
});
