/**
 * The SQL entry points refuse what the nodes refuse: every bound a node checks
 * is checked by its function too, with the same numbers, so a direct call (psql, another client)
 * cannot store a lease of -3600 s or 10^9 s, a line feed or a zero-width space in a key. Each case
 * is tried on both sides: the node's check throws InputError and the function raises SQLSTATE
 * 22023; the value just inside the bound passes both. The numeric bounds are read from LIMITS
 * (src/limits.ts), where the nodes and the core read them too: a bound changed in TypeScript or in
 * SQL alone fails here. And the refused characters are the same code points in SQL as in
 * src/keyText.ts.
 */
import { Pool } from 'pg';
import { checkLeaseSeconds, checkOperationKey, checkOptionalKeyText, checkSettleSeconds } from '../../../src/ledger/validate';
import { checkClaimOptions } from '../../../src/ledger/reconcile/claim';
import { checkResolveOptions } from '../../../src/ledger/reconcile/resolve';
import { checkListOptions } from '../../../src/ledger/admin/list';
import { checkMaxEvents } from '../../../src/ledger/admin/get';
import { checkHealthDays } from '../../../src/ledger/admin/health';
import { checkRetentionOptions, HARD_DELETE_ACKNOWLEDGEMENT } from '../../../src/ledger/admin/retention';
import { prepareSettleItem } from '../../../src/ledger/admin/settle';
import { checkGroupName, checkQueueName, prepareBackoff, prepareCancelInput, prepareDequeueOptions, prepareFailInput, prepareEnqueueInput, prepareExtendLeaseInput, preparePauseInput, prepareReleaseInput, prepareSettleByIdInput } from '../../../src/queue';
import { preparePurgeOptions } from '../../../src/queue/purge';
import { checkListDeadLimit } from '../../../src/queue/stats';
import { prepareRequeueDeadOptions } from '../../../src/queue/requeueDead';
import { InputError } from '../../../src/errors';
import { REFUSED_RANGES } from '../../../src/keyText';
import { testDatabase } from '../../helpers/db';
import { AGING_MIN_POSITIVE_SECONDS, LIMITS, TEXT_LIMITS, type Limit } from '../../../src/limits';

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
	'get: max events': (v) => [`SELECT ${q}.ops_get_operation('b:none', $1)`, [v]],
	'list: page size': (v) => [`SELECT ${q}.ops_list_operations('unknown', 0, NULL, $1, NULL, NULL)`, [v]],
	'list: minimum age': (v) => [`SELECT ${q}.ops_list_operations('unknown', $1, NULL, 10, NULL, NULL)`, [v]],
	'health: days': (v) => [`SELECT ${q}.ops_health($1)`, [v]],
	'compact: older than days': (v) => [`SELECT * FROM ${q}.ops_compact_batch($1, 10, '{}')`, [v]],
	'compact: batch size': (v) => [`SELECT * FROM ${q}.ops_compact_batch(90, $1, '{}')`, [v]],
	'hard delete: older than days': (v) => [`SELECT * FROM ${q}.ops_hard_delete_batch($1, 10, $2, '{}')`, [v, HARD_DELETE_ACKNOWLEDGEMENT]],
	'hard delete: batch size': (v) => [`SELECT * FROM ${q}.ops_hard_delete_batch(90, $1, $2, '{}')`, [v, HARD_DELETE_ACKNOWLEDGEMENT]],
	'enqueue: queue name': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: v, g: 'high', p: {} }])]],
	'enqueue: group': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: v, p: {} }])]],
	'enqueue: dedupe key': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, k: v }])]],
	'enqueue: serial key': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, s: v }])]],
	'enqueue: max attempts': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, m: v }])]],
	'enqueue: delay': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, d: v }])]],
	'enqueue: throttle window': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, k: 'bt', w: v }])]],
	'enqueue: debounce window': (v) => [`SELECT * FROM ${q}.queue_enqueue($1::jsonb)`, [JSON.stringify([{ i: 0, q: 'bq', g: 'high', p: {}, k: 'bd', b: v }])]],
	'claim tasks: lease': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY['high'], ARRAY[5], 1, $1, 0)`, [v]],
	'claim tasks: batch size': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY['high'], ARRAY[5], $1, 30, 0)`, [v]],
	'claim tasks: weight': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY['high'], ARRAY[$1::integer], 1, 30, 0)`, [v]],
	'claim tasks: aging': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY['high'], ARRAY[5], 1, 30, $1)`, [v]],
	'claim tasks: queue name': (v) => [`SELECT * FROM ${q}.queue_claim($1, ARRAY['high'], ARRAY[5], 1, 30, 0)`, [v]],
	'claim tasks: group': (v) => [`SELECT * FROM ${q}.queue_claim('bq', ARRAY[$1::text], ARRAY[5], 1, 30, 0)`, [v]],
	'extend lease: lease': (v) => [`SELECT * FROM ${q}.queue_extend_lease($1::jsonb)`, [JSON.stringify([{ i: 0, id: 1, tok: TOKEN, secs: v }])]],
	'fail: backoff base': (v) => [`SELECT * FROM ${q}.queue_fail('[]', $1, 600)`, [v]],
	'fail: backoff cap': (v) => [`SELECT * FROM ${q}.queue_fail('[]', 0, $1)`, [v]],
	'fail: fixed delay': (v) => [`SELECT * FROM ${q}.queue_fail($1::jsonb, 5, 3600)`, [JSON.stringify([{ i: 0, id: 1, tok: TOKEN, err: 'x', delay: v }])]],
	'release: delay': (v) => [`SELECT * FROM ${q}.queue_release($1::jsonb)`, [JSON.stringify([{ i: 0, id: 1, tok: TOKEN, delay: v }])]],
	'requeue dead: limit': (v) => [`SELECT * FROM ${q}.queue_requeue_dead('bq', NULL, NULL, $1)`, [v]],
	'purge: limit': (v) => [`SELECT * FROM ${q}.queue_purge('bq', 60, NULL, $1)`, [v]],
	'purge: dead retention': (v) => [`SELECT * FROM ${q}.queue_purge('bq', $1, NULL, 10)`, [v]],
	'purge: archive retention': (v) => [`SELECT * FROM ${q}.queue_purge('bq', NULL, $1, 10)`, [v]],
	'list dead: limit': (v) => [`SELECT * FROM ${q}.queue_list_dead('bq', $1)`, [v]],
	'stats: queue name': (v) => [`SELECT * FROM ${q}.queue_stats($1)`, [v]],
	'next due: queue name': (v) => [`SELECT ${q}.queue_next_due($1)`, [v]],
	'wake state: group': (v) => [`SELECT * FROM ${q}.queue_wake_state('bq', ARRAY[$1::text])`, [v]],
};
const nodeOf: Record<string, (v: unknown) => unknown> = {
	'reserve: lease': (v) => checkLeaseSeconds(v),
	'reserve: settle window': (v) => checkSettleSeconds(v),
	'reserve: operation key': (v) => checkOperationKey(v),
	'reserve: target': (v) => checkOptionalKeyText(v, 'The target', TEXT_LIMITS.maxTargetLength),
	'confirm: operation key': (v) => checkOperationKey(v),
	'claim: limit': (v) => checkClaimOptions({ limit: v, claimSeconds: 60 }),
	'claim: extra settle delay': (v) => checkClaimOptions({ limit: 10, settleSeconds: v, claimSeconds: 60 }),
	'claim: claim seconds': (v) => checkClaimOptions({ limit: 10, claimSeconds: v }),
	'resolve: max checks': (v) => checkResolveOptions({ maxChecks: v, backoffBaseSeconds: 1, backoffMaxSeconds: 60 }),
	'resolve: backoff base': (v) => checkResolveOptions({ maxChecks: 5, backoffBaseSeconds: v, backoffMaxSeconds: 86400 }),
	'resolve: backoff ceiling': (v) => checkResolveOptions({ maxChecks: 5, backoffBaseSeconds: 1, backoffMaxSeconds: v }),
	'settle by hand: decided by': (v) => prepareSettleItem(0, { operationKey: 'b:none', decision: 'happened', externalRef: 'x', reason: 'r', decidedBy: v }),
	'get: max events': (v) => checkMaxEvents(v),
	'list: page size': (v) => checkListOptions({ kind: 'unknown', limit: v }),
	'list: minimum age': (v) => checkListOptions({ kind: 'unknown', minAgeSeconds: v }),
	'health: days': (v) => checkHealthDays(v),
	'compact: older than days': (v) => checkRetentionOptions({ mode: 'compact', olderThanDays: v }),
	'compact: batch size': (v) => checkRetentionOptions({ mode: 'compact', olderThanDays: 90, batchSize: v }),
	'hard delete: older than days': (v) => checkRetentionOptions({ mode: 'hard_delete', acknowledge: true, olderThanDays: v }),
	'hard delete: batch size': (v) => checkRetentionOptions({ mode: 'hard_delete', acknowledge: true, olderThanDays: 90, batchSize: v }),
	'enqueue: queue name': (v) => checkQueueName(v),
	'enqueue: group': (v) => checkGroupName(v),
	'enqueue: dedupe key': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, dedupeKey: v as string }),
	'enqueue: serial key': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, serialKey: v as string }),
	'enqueue: max attempts': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, maxAttempts: v as number }),
	'enqueue: delay': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, delaySeconds: v as number }),
	'enqueue: throttle window': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, dedupeKey: 'bt', throttleSeconds: v as number }),
	'enqueue: debounce window': (v) => prepareEnqueueInput({ queue: 'bq', group: 'high', payload: {}, dedupeKey: 'bd', debounceSeconds: v as number }),
	'claim tasks: lease': (v) => prepareDequeueOptions({ queue: 'bq', limit: 1, leaseSeconds: v as number }),
	'claim tasks: batch size': (v) => prepareDequeueOptions({ queue: 'bq', limit: v as number }),
	'claim tasks: weight': (v) => prepareDequeueOptions({ queue: 'bq', limit: 1, groups: [{ name: 'high', weight: v as number }] }),
	'claim tasks: aging': (v) => prepareDequeueOptions({ queue: 'bq', limit: 1, agingSeconds: v as number }),
	'claim tasks: queue name': (v) => prepareDequeueOptions({ queue: v as string, limit: 1 }),
	'claim tasks: group': (v) => prepareDequeueOptions({ queue: 'bq', limit: 1, groups: [{ name: v as string, weight: 5 }] }),
	'extend lease: lease': (v) => prepareExtendLeaseInput({ taskId: '1', leaseToken: TOKEN, leaseSeconds: v as number }),
	'fail: backoff base': (v) => prepareBackoff({ baseSeconds: v as number, capSeconds: 600 }),
	'fail: backoff cap': (v) => prepareBackoff({ baseSeconds: 0, capSeconds: v as number }),
	'fail: fixed delay': (v) => prepareFailInput({ taskId: '1', leaseToken: TOKEN, error: 'x', retryDelay: 'fixed', fixedDelaySeconds: v as number }),
	'release: delay': (v) => prepareReleaseInput({ taskId: '1', leaseToken: TOKEN, delaySeconds: v as number }),
	'requeue dead: limit': (v) => prepareRequeueDeadOptions({ queue: 'bq', limit: v as number }),
	'purge: limit': (v) => preparePurgeOptions({ queue: 'bq', deadAfterSeconds: 60, limit: v as number }),
	'purge: dead retention': (v) => preparePurgeOptions({ queue: 'bq', deadAfterSeconds: v as number }),
	'purge: archive retention': (v) => preparePurgeOptions({ queue: 'bq', archiveAfterSeconds: v as number }),
	'list dead: limit': (v) => checkListDeadLimit(v),
	'stats: queue name': (v) => checkQueueName(v),
	'next due: queue name': (v) => checkQueueName(v),
	'wake state: group': (v) => checkGroupName(v),
};
const long = (n: number, ch = 'x') => ch.repeat(n);
/** Text cases: [case, values both sides refuse, values both sides accept]. */
const TEXT_CASES: Array<[string, unknown[], unknown[]]> = [
	['reserve: operation key', ['a\nb', 'a\tb', 'pay_123\u200b', 'pay\u00a0123', ' pay', 'pay ', 'pay :1', long(513), 'a\u2028b', 'a\ufeffb'], ['pay_123', 'caf\u00e9', long(512), 'a b:c']],
	['reserve: target', ['a\nb', 'stripe\u200b', long(201), '\u{1F600}'.repeat(101)], [null, 'stripe', long(200), '\u{1F600}'.repeat(100)]],
	['confirm: operation key', ['a\nb', 'k\u200c'], ['k']],
	['settle by hand: decided by', ['', ' ', long(201)], ['alice', long(200)]],
	['enqueue: queue name', ['', ' ', 'q\nx', 'q\u200b', long(201)], ['bq', long(200), 'Zürich']],
	['enqueue: group', ['', 'g\n', 'g\u00a0', long(101)], ['high', long(100)]],
	['enqueue: dedupe key', ['d\n', 'd\u200b', 'd\u00a0', long(513)], ['d-1', long(512)]],
	// Bytes, not characters: 256 two-byte characters are the limit (the column's CHECK counts bytes too).
	[
		'enqueue: serial key',
		['s\n', 's\u200b', 's\u00a0', long(TEXT_LIMITS.maxSerialKeyBytes + 1), '\u00e9'.repeat(TEXT_LIMITS.maxSerialKeyBytes / 2 + 1)],
		['cust-1', long(TEXT_LIMITS.maxSerialKeyBytes), '\u00e9'.repeat(TEXT_LIMITS.maxSerialKeyBytes / 2)],
	],
	['claim tasks: queue name', ['q\n', ' ', 'q\u200b'], ['bq', 'Zürich']],
	['claim tasks: group', ['g\n', 'g\u3000'], ['high']],
	['stats: queue name', ['q\n', '', 'q\u200b'], ['bq']],
	['next due: queue name', ['q\r', ' '], ['bq']],
	['wake state: group', ['g\u00a0', ''], ['high']],
];

/**
 * Every entry of LIMITS: the cases that call its SQL function(s) (whole: only whole numbers are
 * accepted; extra: more values both sides refuse), or why no SQL function checks it. A Record over
 * every key, so a new entry does not compile until it is listed here.
 */
type Checked = { cases: string[]; whole: boolean; extra?: unknown[] };
const BY_LIMIT: Record<keyof typeof LIMITS, Checked | string> = {
	maxConnections: 'the pool size of the n8n process: no SQL function sees it',
	connectTimeoutMs: 'a client-side wait: no SQL function sees it',
	statementTimeoutMs: 'applied by SET LOCAL statement_timeout, which Postgres checks itself',
	lockTimeoutMs: 'applied by SET LOCAL lock_timeout, which Postgres checks itself',
	leaseSeconds: { cases: ['reserve: lease'], whole: true, extra: [-3600, 0.5, 1e9] },
	settleWindowSeconds: { cases: ['reserve: settle window'], whole: true, extra: [1.5] },
	reconcileBatchSize: { cases: ['claim: limit'], whole: true },
	reconcileSettleDelaySeconds: { cases: ['claim: extra settle delay'], whole: true },
	reconcileClaimSeconds: { cases: ['claim: claim seconds'], whole: true },
	resolveMaxChecks: { cases: ['resolve: max checks'], whole: true },
	resolveBackoffBaseSeconds: { cases: ['resolve: backoff base'], whole: true },
	resolveBackoffMaxSeconds: { cases: ['resolve: backoff ceiling'], whole: true },
	getMaxEvents: { cases: ['get: max events'], whole: true },
	listPageSize: { cases: ['list: page size'], whole: true },
	listMinAgeSeconds: { cases: ['list: minimum age'], whole: true },
	healthDays: { cases: ['health: days'], whole: true },
	retentionOlderThanDays: { cases: ['compact: older than days', 'hard delete: older than days'], whole: true },
	retentionBatchSize: { cases: ['compact: batch size', 'hard delete: batch size'], whole: true },
	retentionMaxBatches: 'the number of batches the node runs, one call each: no SQL function sees it',
	retentionMaxDurationMs: 'a client-side clock between batches: no SQL function sees it',
	retentionStatementTimeoutMs: 'applied by SET LOCAL statement_timeout, which Postgres checks itself',
	queueLeaseSeconds: { cases: ['claim tasks: lease', 'extend lease: lease'], whole: false, extra: [-3600, 0.5, 1e9] },
	dequeueBatchSize: { cases: ['claim tasks: batch size'], whole: true },
	agingSeconds: { cases: ['claim tasks: aging'], whole: false, extra: [AGING_MIN_POSITIVE_SECONDS / 2] },
	priorityGroups: 'queue_claim takes any number of groups; the cap keeps a node parameter small',
	groupWeight: { cases: ['claim tasks: weight'], whole: true },
	maxAttempts: { cases: ['enqueue: max attempts'], whole: true, extra: [1.5] },
	enqueueDelaySeconds: { cases: ['enqueue: delay'], whole: false },
	enqueueThrottleSeconds: { cases: ['enqueue: throttle window'], whole: false },
	enqueueDebounceSeconds: { cases: ['enqueue: debounce window'], whole: false },
	releaseDelaySeconds: { cases: ['release: delay'], whole: false },
	backoffBaseSeconds: { cases: ['fail: backoff base'], whole: false },
	backoffCapSeconds: { cases: ['fail: backoff cap'], whole: false },
	fixedDelaySeconds: { cases: ['fail: fixed delay'], whole: false },
	statsDeadTasks: 'Stats lists dead tasks through queue_list_dead only when it is above 0 (listDeadLimit)',
	listDeadLimit: { cases: ['list dead: limit'], whole: true },
	requeueDeadLimit: { cases: ['requeue dead: limit'], whole: true },
	purgeLimit: { cases: ['purge: limit'], whole: true },
	purgeRetentionSeconds: { cases: ['purge: dead retention', 'purge: archive retention'], whole: false },
	triggerPollSeconds: 'a timer of the trigger: no SQL function sees it',
	triggerMaxInFlight: 'counted by the trigger: no SQL function sees it',
	triggerExecutionTimeoutSeconds: 'a timer of the trigger: no SQL function sees it',
	triggerMaxPerMinute: 'counted by the trigger: no SQL function sees it',
};
/** Just outside the bound on each side (a fraction outside too where fractions are taken), and the bound itself. */
function edges(limit: Limit, whole: boolean): { outside: number[]; inside: number[] } {
	const step = whole ? 1 : 0.5;
	return { outside: [limit.min - step, limit.max + step], inside: [limit.min, limit.max] };
}
const NUMBER_CASES: Array<[string, unknown[], unknown[]]> = Object.entries(BY_LIMIT).flatMap(([key, c]) => {
	if (typeof c === 'string') return [];
	const { outside, inside } = edges(LIMITS[key as keyof typeof LIMITS], c.whole);
	return c.cases.map((name): [string, unknown[], unknown[]] => [`${name} (LIMITS.${key})`, [...outside, ...(c.extra ?? [])], inside]);
});
const CASES = [...NUMBER_CASES, ...TEXT_CASES];
const caseName = (name: string) => name.replace(/ \(LIMITS\.\w+\)$/, '');

describe('every bound a node checks, its SQL entry point checks too', () => {
	const refused = CASES.flatMap(([name, bad]) => bad.map((v) => [name, JSON.stringify(v)?.slice(0, 60), v] as const));
	it.each(refused)('%s %s: the node and the function both refuse it', async (name, _label, v) => {
		expect(() => nodeOf[caseName(name)](v)).toThrow(InputError);
		const [sql, params] = sqlOf[caseName(name)](v);
		await expect(pool.query(sql, params)).rejects.toMatchObject({ code: '22023' });
	});
	const accepted = CASES.flatMap(([name, , good]) => good.map((v) => [name, JSON.stringify(v)?.slice(0, 60), v] as const));
	it.each(accepted)('%s %s: both take it', async (name, _label, v) => {
		expect(() => nodeOf[caseName(name)](v)).not.toThrow();
		const [sql, params] = sqlOf[caseName(name)](v);
		await expect(pool.query(sql, params)).resolves.toBeDefined();
	});

	it('every case named in BY_LIMIT exists on both sides, and each case belongs to one limit', () => {
		const named = Object.values(BY_LIMIT).flatMap((c) => (typeof c === 'string' ? [] : c.cases));
		expect(new Set(named).size).toBe(named.length);
		for (const name of named) {
			expect(sqlOf[name]).toBeInstanceOf(Function);
			expect(nodeOf[name]).toBeInstanceOf(Function);
		}
	});

	it('the edges are read from LIMITS (so this file follows a change there)', () => {
		expect(NUMBER_CASES.find(([n]) => n.startsWith('claim tasks: lease'))).toEqual([
			'claim tasks: lease (LIMITS.queueLeaseSeconds)',
			[LIMITS.queueLeaseSeconds.min - 0.5, LIMITS.queueLeaseSeconds.max + 0.5, -3600, 0.5, 1e9],
			[LIMITS.queueLeaseSeconds.min, LIMITS.queueLeaseSeconds.max],
		]);
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

describe('the texts Cancel cuts, queue_cancel refuses beyond the same length (TEXT_LIMITS)', () => {
	const call = (item: Record<string, unknown>) => pool.query(`SELECT * FROM ${q}.queue_cancel($1::jsonb)`, [JSON.stringify([{ i: 0, queue: 'bq-no-tasks', id: 1, ...item }])]);
	it.each([
		['reason', 'reason', TEXT_LIMITS.maxCancelReasonLength],
		['cancelledBy', 'by', TEXT_LIMITS.maxCancelledByLength],
	] as const)('%s: the node cuts to the limit and the function takes that; one character more is refused', async (field, sqlField, max) => {
		// What the node sends for an over-long text, in 1-, 3- and 4-byte characters (a 4-byte one is two UTF-16 units).
		for (const ch of ['x', '\u20ac', '\u{1F600}']) {
			const sent = prepareCancelInput({ queue: 'bq-no-tasks', taskId: 1, [field]: ch.repeat(max + 5) })[field] as string;
			expect(sent.length).toBeLessThanOrEqual(max);
			expect(sent.length).toBeGreaterThanOrEqual(max - 1);
			await expect(call({ [sqlField]: sent })).resolves.toMatchObject({ rows: [{ outcome: 'not_found' }] });
		}
		await expect(call({ [sqlField]: 'x'.repeat(max) })).resolves.toBeDefined();
		await expect(call({ [sqlField]: '\u{1F600}'.repeat(max) })).resolves.toBeDefined();
		await expect(call({ [sqlField]: 'x'.repeat(max + 1) })).rejects.toMatchObject({ code: '22023' });
	});
});

describe('the texts Pause and Resume cut, queue_pause and queue_resume refuse beyond the same length (TEXT_LIMITS)', () => {
	const call = (func: 'queue_pause' | 'queue_resume', reason: string | null, by: string | null) =>
		pool.query(`SELECT * FROM ${q}.${func}('bq-pause', 'g', $1, $2)`, [reason, by]);
	it.each([
		['reason', TEXT_LIMITS.maxPauseReasonLength],
		['by', TEXT_LIMITS.maxPausedByLength],
	] as const)('%s: the node cuts to the limit and both functions take that; one character more is refused', async (field, max) => {
		const args = (text: string): [string | null, string | null] => (field === 'reason' ? [text, null] : [null, text]);
		for (const ch of ['x', '\u20ac', '\u{1F600}']) {
			const sent = preparePauseInput({ queue: 'bq-pause', [field]: ch.repeat(max + 5) })[field] as string;
			expect(sent.length).toBeLessThanOrEqual(max);
			expect(sent.length).toBeGreaterThanOrEqual(max - 1);
			for (const func of ['queue_pause', 'queue_resume'] as const) await expect(call(func, ...args(sent))).resolves.toBeDefined();
		}
		for (const func of ['queue_pause', 'queue_resume'] as const) {
			await expect(call(func, ...args('\u{1F600}'.repeat(max)))).resolves.toBeDefined();
			await expect(call(func, ...args('x'.repeat(max + 1)))).rejects.toMatchObject({ code: '22023' });
		}
	});
});

describe('the texts Settle by ID cuts, queue_settle_by_id takes and stores; beyond the same length refused (TEXT_LIMITS)', () => {
	// A real task each time, rescheduled, so the stored columns' own CHECKs (bytes) take the text too.
	const call = async (item: Record<string, unknown>) => {
		const { rows } = await pool.query(
			`INSERT INTO ${q}.queue_tasks (queue, priority_group, status, run_at) VALUES ('bq-settle-by-id', 'g', 'pending', now()) RETURNING id::text AS id`,
		);
		return pool.query(`SELECT * FROM ${q}.queue_settle_by_id($1::jsonb)`, [JSON.stringify([{ i: 0, queue: 'bq-settle-by-id', id: rows[0].id, act: 'reschedule', ...item }])]);
	};
	it.each([
		['reason', 'reason', TEXT_LIMITS.maxSettleByIdReasonLength],
		['settledBy', 'by', TEXT_LIMITS.maxSettleByIdByLength],
	] as const)('%s: the node cuts to the limit and the function stores that; one character more is refused', async (field, sqlField, max) => {
		for (const ch of ['x', '\u20ac', '\u{1F600}']) {
			const sent = prepareSettleByIdInput({ queue: 'bq-settle-by-id', taskId: 1, action: 'reschedule', [field]: ch.repeat(max + 5) })[field] as string;
			expect(sent.length).toBeLessThanOrEqual(max);
			expect(sent.length).toBeGreaterThanOrEqual(max - 1);
			await expect(call({ [sqlField]: sent })).resolves.toMatchObject({ rows: [{ outcome: 'rescheduled' }] });
		}
		await expect(call({ [sqlField]: '\u{1F600}'.repeat(max) })).resolves.toMatchObject({ rows: [{ outcome: 'rescheduled' }] });
		await expect(call({ [sqlField]: 'x'.repeat(max + 1) })).rejects.toMatchObject({ code: '22023' });
	});
});

describe('the shape tests the functions make before the full rules (length apart from the pattern)', () => {
	const reserve = (over: Record<string, unknown>) => pool.query(`SELECT * FROM ${q}.reserve_operations($1::jsonb, '{}')`, [JSON.stringify([reserveItem({ k: `b:shape:${Math.random()}`, ...over })])]);
	it('reserve_operations: a fingerprint of exactly 64 lowercase hex digits and an algorithm of 1 to 100 characters pass; anything else is refused', async () => {
		await expect(reserve({ f: 'a'.repeat(64), a: 'x'.repeat(100) })).resolves.toMatchObject({ rows: [{ outcome: 'proceed' }] });
		for (const bad of [{ f: 'a'.repeat(63) }, { f: 'a'.repeat(65) }, { f: 'A'.repeat(64) }, { f: `${'a'.repeat(63)}g` }, { f: '' }, { f: null }, { a: 'x'.repeat(101) }, { a: '' }, { a: 'X' }, { a: null }]) {
			await expect(reserve(bad)).rejects.toMatchObject({ code: '22023' });
		}
	});
	it.each([
		['queue_claim, queue name', 200, `SELECT * FROM @.queue_claim($1, '{g}', '{1}', 1, 60, 0)`],
		['queue_claim, group name', 100, `SELECT * FROM @.queue_claim('shape', ARRAY[$1::text], '{1}', 1, 60, 0)`],
		['queue_stats', 200, `SELECT * FROM @.queue_stats($1)`],
		['queue_next_due', 200, `SELECT @.queue_next_due($1)`],
	] as const)('%s: a plain name at the limit passes; one character more, an empty or a blank name is refused', async (_what, max, sqlText) => {
		const sql = sqlText.replace('@.', `${q}.`); // q is known only once beforeAll ran
		await expect(pool.query(sql, ['n'.repeat(max)])).resolves.toBeDefined();
		for (const bad of ['n'.repeat(max + 1), '', '   ']) await expect(pool.query(sql, [bad])).rejects.toMatchObject({ code: '22023' });
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
