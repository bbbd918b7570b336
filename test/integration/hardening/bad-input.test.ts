/**
 * Case 4: bad input across the four nodes. Every case:
 *   - without continueOnFail: a batch of [good item, bad item] throws a NodeOperationError whose
 *     message names the problem (and, for item-level errors, carries the bad item's index), and
 *     nothing at all is written (the good item neither: input is validated before the one
 *     database round trip);
 *   - with continueOnFail: the bad item alone comes out as { json: { error }, pairedItem } on
 *     output 0, every other output is empty, and nothing is written;
 * "nothing is written" = row and event counts of every table in the schema are unchanged.
 */
import type { INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { closeAllPools } from '../../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { testCredentials } from '../../helpers/fakeExecute';
import { DEFAULT_PRIORITY_GROUPS, claim, confirm, queueOp, reserve, resolve, type Creds } from './run';

let db: Awaited<ReturnType<typeof testDatabase>>;
let creds: Creds;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'hz_bad' });
	creds = testCredentials(DATABASE_URL, db.schema);
	// Something to claim and complete, so a bad claim/dequeue would have work to damage.
	await reserve(creds, ['bad:seed:1'], { target: 'seed' });
	await db.pool.query(`UPDATE ${db.schemaSql}.operations SET status = 'unknown', unknown_since = now(), next_check_at = now(), settle_until = now() - interval '1 day'`);
	await queueOp(creds, 2, { operation: 'enqueue', queue: 'jobs', priorityGroup: 'normal', payload: { a: 1 } });
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});

async function snapshot() {
	const s = db.schemaSql;
	const { rows } = await db.pool.query(`
		SELECT (SELECT count(*) FROM ${s}.operations)::int AS ops,
		       (SELECT count(*) FROM ${s}.operation_events)::int AS events,
		       (SELECT count(claim_token_hash) FROM ${s}.operations)::int AS op_claims,
		       (SELECT count(*) FROM ${s}.queue_tasks)::int AS tasks,
		       (SELECT count(*) FROM ${s}.queue_tasks WHERE status <> 'pending')::int AS not_pending,
		       (SELECT count(*) FROM ${s}.queue_tasks_archive)::int AS archived,
		       (SELECT coalesce(sum(claims), 0) FROM ${s}.queue_scheduler)::int AS claims,
		       (SELECT count(*) FROM pg_namespace)::int AS schemas`);
	return rows[0];
}

type Row = Record<string, unknown>;
interface Case {
	name: string;
	/** Runs the node with these per-item overrides (item 0 good, item 1 bad; only the bad one under continueOnFail). */
	run: (rows: Row[], cof: boolean) => Promise<INodeExecutionData[][]>;
	bad: Row;
	good?: Row;
	error: RegExp;
	/** The node reads item 0 only (claim, dequeue): the batch is the bad item alone. */
	single?: boolean;
	/** A batch-level (credential) error: no item index. */
	batchLevel?: boolean;
}

const pick = (rows: Row[], name: string, fallback: unknown) => (i: number) => (name in rows[i] ? rows[i][name] : fallback);
const params = (rows: Row[], defaults: Row) => Object.fromEntries(Object.keys({ ...defaults, ...Object.assign({}, ...rows) }).map((k) => [k, pick(rows, k, defaults[k])]));
const TOKEN = '3f1b6a52-7d0e-4c8b-9a51-0c2d4e6f8a10';

let seq = 0;
const R = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Reserve: ${name}`,
	bad,
	error,
	run: (rows, cof) =>
		reserve(
			creds,
			rows.map(() => `bad:r:${++seq}`),
			params(rows, { keyMode: 'custom', operationKey: 'bad:default:key', requestSource: 'custom', request: { amount: 1 }, leaseSeconds: 60, target: 't', resource: 'pay', action: 'charge', entity: 'e', version: 'v1' }),
			{ continueOnFail: cof },
		),
	good: { operationKey: 'bad:good:1' },
});
const C = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Confirm: ${name}`,
	bad,
	error,
	good: { operationKey: 'bad:good:1' },
	run: (rows, cof) =>
		confirm(
			creds,
			rows.map(() => ({ key: 'x', token: TOKEN })),
			params(rows, { operationKey: 'bad:seed:1', leaseToken: TOKEN, outcome: 'succeeded', externalReference: 'ref-1', options: {} }),
			{ continueOnFail: cof },
		),
});
const CL = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Reconcile claim: ${name}`,
	bad,
	error,
	single: true,
	run: (rows, cof) => claim(creds, params(rows, { batchSize: 10, settleSeconds: 0, claimSeconds: 60, target: '' }), { continueOnFail: cof }),
});
const RS = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Reconcile resolve: ${name}`,
	bad,
	error,
	run: (rows, cof) =>
		resolve(
			creds,
			rows.map(() => ({ key: 'x', claimToken: TOKEN })),
			params(rows, { operationKey: 'bad:seed:1', claimToken: TOKEN, resolution: 'happened', externalReference: 'ref-1', maxChecks: 5, backoffBaseSeconds: 60, backoffMaxSeconds: 600 }),
			{ continueOnFail: cof },
		),
});
const EQ = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Priority Dequeue enqueue: ${name}`,
	bad,
	error,
	run: (rows, cof) =>
		queueOp(creds, rows.length, { operation: 'enqueue', ...params(rows, { queue: 'jobs', priorityGroup: 'normal', payload: { a: 1 }, dedupeKey: '', options: {} }) }, { continueOnFail: cof }),
});
const DQ = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Priority Dequeue dequeue: ${name}`,
	bad,
	error,
	single: true,
	run: (rows, cof) =>
		queueOp(creds, 1, { operation: 'dequeue', ...params(rows, { queue: 'jobs', batchSize: 10, leaseSeconds: 60, priorityGroups: DEFAULT_PRIORITY_GROUPS, options: {} }) }, { continueOnFail: cof }),
});
const CP = (name: string, bad: Row, error: RegExp): Case => ({
	name: `Priority Dequeue complete: ${name}`,
	bad,
	error,
	run: (rows, cof) =>
		queueOp(creds, rows.length, { operation: 'complete', ...params(rows, { taskSource: 'explicit', taskId: '1', leaseToken: TOKEN, options: {} }) }, { continueOnFail: cof }),
});

const circular: Record<string, unknown> = { a: 1 };
circular.self = circular;
let deep: unknown = 1;
for (let i = 0; i < 150; i++) deep = [deep];
const huge = { blob: 'x'.repeat(1024 * 1024 + 10) };

const cases: Case[] = [
	// Reserve Operation: keys
	R('missing key (expression gave null)', { operationKey: null }, /operation key is empty/),
	R('empty key', { operationKey: '' }, /operation key is empty/),
	R('blank key', { operationKey: '   ' }, /operation key is empty/),
	R('key of 513 bytes', { operationKey: 'k'.repeat(513) }, /513 bytes long; at most 512/),
	R('key of 257 two-byte characters (514 bytes)', { operationKey: 'é'.repeat(257) }, /514 bytes long/),
	R('key with a NUL byte', { operationKey: 'pay:\u0000:1' }, /control character/),
	R('key with a line break', { operationKey: 'pay:\n:1' }, /control character/),
	R('key with surrounding space', { operationKey: ' pay:1' }, /leading or trailing white space/),
	R('key that is an object', { operationKey: { a: 1 } }, /must be a string, got object/),
	R('key with a lone surrogate', { operationKey: 'pay:\uD800' }, /lone UTF-16 surrogate/),
	R('key part with ":" (parts mode)', { keyMode: 'parts', entity: 'a:b' }, /contains ":"/),
	R('empty key part (parts mode)', { keyMode: 'parts', entity: '' }, /part "entity" is empty/),
	// Reserve Operation: requests
	R('request with a NUL character', { request: { note: 'a\u0000b' } }, /request\.note: contains a NUL/),
	R('request with a BigInt', { request: { amount: BigInt(10) } }, /request\.amount: is a BigInt/),
	R('request with a Date', { request: { at: new Date() } }, /request\.at: is a Date/),
	R('circular request', { request: circular }, /circular reference/),
	R('request over 1 MiB', { request: huge }, /at most 1048576 are allowed/),
	R('request with NaN', { request: { amount: Number.NaN } }, /NaN is not a JSON number/),
	R('request with Infinity', { request: { amount: Number.POSITIVE_INFINITY } }, /Infinity is not a JSON number/),
	R('request with a function', { request: { f: () => 1 } }, /is a function, not JSON/),
	R('request that is not valid JSON text', { request: '{"amount": ' }, /The request is not valid JSON/),
	R('request text naming a member twice', { request: '{"amount": 100, "amount": 9900}' }, /The request has the member name "amount" twice in one object \(at \$\)/),
	R('request text naming a nested member twice, once escaped', { request: '{"lines": [{"sku": "a", "\\u0073ku": "b"}]}' }, /member name "sku" twice in one object \(at \$\.lines\[0\]\)/),
	R('request nested 150 levels', { request: deep }, /nests deeper than 100 levels/),
	// Reserve Operation: leases and target
	R('negative lease', { leaseSeconds: -5 }, /lease must be a whole number of seconds from 1 to 604800/),
	R('zero lease', { leaseSeconds: 0 }, /lease must be a whole number/),
	R('absurd lease (10^12 s)', { leaseSeconds: 1e12 }, /lease must be a whole number/),
	R('fractional lease', { leaseSeconds: 1.5 }, /lease must be a whole number/),
	R('lease that is not a number', { leaseSeconds: 'soon' }, /lease must be a whole number/),
	R('target of 201 characters', { target: 't'.repeat(201) }, /target is 201 characters long/),
	R('target with a NUL byte', { target: 'pay\u0000ments' }, /target contains a NUL/),
	// Confirm Operation
	C('missing lease token', { leaseToken: '' }, /No lease token/),
	C('lease token that tries SQL', { leaseToken: "x'; DELETE FROM operations; --" }, /lease token is not a UUID/),
	C('missing key', { operationKey: '' }, /operation key is empty/),
	C('key of 600 bytes', { operationKey: 'k'.repeat(600) }, /600 bytes long/),
	C('unknown outcome', { outcome: 'maybe' }, /must be succeeded, failed or unknown; got "maybe"/),
	C('external reference with NUL', { externalReference: 'ref\u0000' }, /external reference contains a NUL/),
	C('external reference of 1001 characters', { externalReference: 'r'.repeat(1001) }, /external reference is 1001 characters/),
	C('oversized response with "Reject Item"', { options: { maxResponseBytes: 2, oversizeResponse: 'error' } }, /bytes as JSON; at most 2 may be stored/),
	// Reconcile Unknown
	CL('batch size 0', { batchSize: 0 }, /batch size must be a whole number from 1 to 1000/),
	CL('batch size 10^6', { batchSize: 1e6 }, /batch size must be a whole number from 1 to 1000/),
	CL('negative batch size', { batchSize: -3 }, /batch size must be/),
	CL('negative settle delay', { settleSeconds: -1 }, /extra settle delay \(seconds\) must be/),
	CL('claim of 0 seconds', { claimSeconds: 0 }, /claim duration \(seconds\) must be/),
	CL('absurd claim duration', { claimSeconds: 1e12 }, /claim duration \(seconds\) must be/),
	CL('target with NUL', { target: 'a\u0000' }, /target contains a NUL/),
	RS('missing claim token', { claimToken: '' }, /claim token/i),
	RS('claim token that tries SQL', { claimToken: "'; DROP TABLE operations; --" }, /claim token/i),
	RS('unknown resolution', { resolution: 'perhaps' }, /resolution/i),
	RS('happened without a reference', { externalReference: '' }, /needs the target's reference/),
	RS('backoff ceiling below base', { backoffBaseSeconds: 600, backoffMaxSeconds: 60 }, /backoff ceiling must not be below the backoff base/),
	RS('max checks 0', { maxChecks: 0 }, /Max checks must be a whole number from 1 to 1000/),
	// Priority Dequeue
	EQ('empty queue name', { queue: '' }, /Queue name must be a non-empty string/),
	EQ('queue name of 201 bytes', { queue: 'q'.repeat(201) }, /Queue name must be at most 200 bytes/),
	EQ('empty priority group', { priorityGroup: ' ' }, /Priority group must be a non-empty string/),
	EQ('priority group of 101 bytes', { priorityGroup: 'g'.repeat(101) }, /Priority group must be at most 100 bytes/),
	EQ('payload that is not valid JSON text', { payload: '{"a":' }, /The payload is not valid JSON/),
	EQ('payload text naming a member twice', { payload: '{"to": "a@x", "to": "b@x"}' }, /The payload has the member name "to" twice/),
	EQ('payload with a BigInt', { payload: { n: BigInt(1) } }, /The payload is not plain JSON: payload\.n: is a BigInt/),
	EQ('circular payload', { payload: circular }, /payload\.self: is a circular reference/),
	EQ('payload with a NUL character', { payload: { s: 'a\u0000' } }, /payload\.s: contains a NUL/),
	EQ('payload text with an escaped NUL', { payload: '{"s":"\\u0000"}' }, /payload\.s: contains a NUL/),
	EQ('payload with a Date', { payload: { at: new Date() } }, /payload\.at: is a Date/),
	EQ('max attempts 0', { options: { maxAttempts: 0 } }, /Max attempts must be a whole number from 1 to 1000/),
	EQ('max attempts 10^9', { options: { maxAttempts: 1e9 } }, /Max attempts must be a whole number/),
	EQ('negative delay', { options: { delaySeconds: -10 } }, /Delay must be a number of seconds from 0/),
	EQ('not-before that is no date', { options: { notBefore: 'next tuesday-ish' } }, /Not before is not a valid date/),
	EQ('dedupe key of 600 bytes', { dedupeKey: 'd'.repeat(600) }, /Dedupe key must be a string of at most 512 bytes/),
	DQ('batch size 0', { batchSize: 0 }, /Batch size must be a whole number from 1 to 10000/),
	DQ('batch size 10^7', { batchSize: 1e7 }, /Batch size must be a whole number from 1 to 10000/),
	DQ('negative lease', { leaseSeconds: -1 }, /Lease must be a number of seconds from 1 to 86400/),
	DQ('absurd lease', { leaseSeconds: 1e9 }, /Lease must be a number of seconds from 1 to 86400/),
	DQ('no priority groups', { priorityGroups: { group: [] } }, /Priority groups: add at least one group/),
	DQ('group without a name', { priorityGroups: { group: [{ name: ' ', weight: 1 }] } }, /Priority groups: group 1 has no name/),
	DQ('group weight that is not whole', { priorityGroups: { group: [{ name: 'vip', weight: 1.5 }] } }, /the weight of "vip" must be a whole number/),
	DQ('group of weight 0', { priorityGroups: { group: [{ name: 'high', weight: 0 }, { name: 'low', weight: 1 }] } }, /Weight of group "high" must be a whole number from 1 to 1000/),
	DQ('group listed twice', { priorityGroups: { group: [{ name: 'high', weight: 5 }, { name: 'high', weight: 1 }] } }, /Priority group "high" is listed twice/),
	DQ('group name of 101 bytes', { priorityGroups: { group: [{ name: 'g'.repeat(101), weight: 1 }] } }, /Priority group must be at most 100 bytes/),
	DQ('21 groups', { priorityGroups: { group: Array.from({ length: 21 }, (_, i) => ({ name: `g${i}`, weight: 1 })) } }, /Give 1 to 20 priority groups/),
	DQ('negative aging interval', { options: { agingSeconds: -1 } }, /Aging interval must be a number of seconds from 0/),
	CP('task id that is not a number', { taskId: 'abc' }, /Task ID must be a positive integer/),
	CP('task id that tries SQL', { taskId: '1; DELETE FROM queue_tasks' }, /Task ID must be a positive integer/),
	CP('negative task id', { taskId: '-1' }, /Task ID must be a positive integer/),
	CP('lease token that is not a UUID', { leaseToken: 'nope' }, /Lease token must be the UUID/),
	CP('result with a BigInt', { options: { result: { n: BigInt(2) } } }, /The result is not plain JSON: result\.n: is a BigInt/),
];

// Schema names that try to inject SQL, through the credential of every node.
const INJECTIONS = ['x"; DROP SCHEMA public CASCADE; --', 'public; DROP TABLE y', 'Robert"); DROP TABLE operations;--', 'a b', '../etc'];
for (const schema of INJECTIONS) {
	const bad = testCredentials(DATABASE_URL, schema);
	const mk = (node: string, run: (cof: boolean) => Promise<INodeExecutionData[][]>): Case => ({
		name: `${node}: schema name ${JSON.stringify(schema)}`,
		bad: {},
		error: /failed and nothing of this batch was recorded \(\d item\(s\)\): the credential's schema setting is not usable: Invalid schema name/,
		single: true,
		batchLevel: true,
		run: (_rows, cof) => run(cof),
	});
	cases.push(
		mk('Reserve', (cof) => reserve(bad, ['bad:inj:1'], {}, { continueOnFail: cof })),
		mk('Confirm', (cof) => confirm(bad, [{ key: 'bad:seed:1', token: TOKEN }], {}, { continueOnFail: cof })),
		mk('Reconcile claim', (cof) => claim(bad, {}, { continueOnFail: cof })),
		mk('Priority Dequeue', (cof) => queueOp(bad, 1, { operation: 'dequeue', queue: 'jobs', batchSize: 5, leaseSeconds: 60, priorityGroups: DEFAULT_PRIORITY_GROUPS }, { continueOnFail: cof })),
	);
}

describe('bad input: a clear item-level error, nothing written, continueOnFail respected', () => {
	it(`has at least 40 cases across the four nodes (${cases.length})`, () => {
		expect(cases.length).toBeGreaterThanOrEqual(40);
		for (const node of ['Reserve', 'Confirm', 'Reconcile', 'Priority Dequeue']) expect(cases.some((c) => c.name.startsWith(node))).toBe(true);
	});

	it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
		const before = await snapshot();
		// Without continueOnFail: the node throws for the bad item; the good item is not written either.
		const rows = c.single ? [c.bad] : [c.good ?? {}, c.bad];
		let thrown: unknown;
		try {
			await c.run(rows, false);
		} catch (e) {
			thrown = e;
		}
		expect(thrown).toBeInstanceOf(NodeOperationError);
		const err = thrown as NodeOperationError;
		expect(err.message).toMatch(c.error);
		if (!c.batchLevel) expect(err.context.itemIndex).toBe(rows.length - 1);
		expect(await snapshot()).toEqual(before);

		// With continueOnFail: one error item, paired with the bad input item, on output 0
		// (Unrecorded); nothing on any other output.
		const out = await c.run([c.bad], true);
		expect(out[0]).toHaveLength(1);
		expect(out[0][0].pairedItem).toEqual({ item: 0 });
		expect(String(out[0][0].json.error)).toMatch(c.error);
		for (const o of out.slice(1)) expect(o).toHaveLength(0);
		expect(await snapshot()).toEqual(before);
	});

	it('an unknown priority group is not an error but is never claimed by a dequeue that does not list it, and stays pending', async () => {
		const enq = await queueOp(creds, 1, { operation: 'enqueue', queue: 'groups', priorityGroup: 'platinum', payload: {} });
		const id = enq[1][0].json.taskId as string;
		expect(typeof id).toBe('string');
		const out = await queueOp(creds, 1, { operation: 'dequeue', queue: 'groups', batchSize: 10, leaseSeconds: 60, priorityGroups: DEFAULT_PRIORITY_GROUPS });
		expect(out).toEqual([[], []]);
		const { rows } = await db.pool.query(`SELECT status FROM ${db.schemaSql}.queue_tasks WHERE id = $1`, [id]);
		expect(rows).toEqual([{ status: 'pending' }]);
		const listed = await queueOp(creds, 1, { operation: 'dequeue', queue: 'groups', batchSize: 10, leaseSeconds: 60, priorityGroups: { group: [{ name: 'platinum', weight: 1 }] } });
		expect(listed[1].map((it) => it.json.taskId)).toEqual([id]);
	});

	it('the schema-name injections created or dropped nothing', async () => {
		const { rows } = await db.pool.query(`SELECT nspname FROM pg_namespace WHERE nspname = ANY($1)`, [INJECTIONS]);
		expect(rows).toEqual([]);
		const pub = await db.pool.query(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'public'`);
		expect(pub.rows[0].n).toBe(1);
	});
});
