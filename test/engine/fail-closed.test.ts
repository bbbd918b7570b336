/**
 * The fail-closed invariant in n8n's real engine (n8n-core 2.33.2 WorkflowExecute, built nodes from
 * dist/): an item reaches a go-ahead output (Reserve's Proceed, Confirm's Succeeded, Reconcile's To
 * Check, Succeeded (happened) and Failed (did not happen), Dequeue's claimed tasks, the Admin
 * node's Settled) only if the database decided it in this run.
 *
 * Matrix (every node at its one version, 1): each node/operation × On Error (stop, continue
 * regular output, continue error output) × Always Output Data × Retry On Fail × Execute Once ×
 * items (valid, one invalid, database down via a credential on a closed loopback port; Claim and
 * Dequeue also "nothing due"). Each case asserts what reached each downstream sink, checking every
 * go-ahead item against the database. Reconcile Unknown and Operation Ledger Admin have one output
 * list for all their operations: an operation's items never reach another operation's outputs.
 * Then the cases that failed on the node versions the package had before its first release
 * (Retry On Fail and an input field `error`, a forged NOTIFY, Always Output Data), pinned data,
 * partial runs and Retry On Fail after a partly decided batch.
 */
import net from 'node:net';
import { Client } from 'pg';
import type { INode, INodeExecutionData, INodeTypeDescription } from 'n8n-workflow';
import { confirmOperations, prepareConfirmItem } from '../../src/ledger/confirm';
import { prepareReserveItem, reserveOperations } from '../../src/ledger/reserve';
import { enqueue, queueChannel } from '../../src/queue';
import { closeAllPools as closeSrcPools } from '../../src/db/pool';
import { DATABASE_URL, sleep, testDatabase } from '../helpers/db';
import { testCredentials } from '../helpers/fakeExecute';
import { Engine, PKG, ROOT, connect, node, runError, runPartial, sink, source, type Received } from './harness';

jest.setTimeout(120_000);

type OnError = 'stopWorkflow' | 'continueRegularOutput' | 'continueErrorOutput';
type Mode = 'valid' | 'invalid' | 'down' | 'nothing';
interface Settings {
	onError: OnError;
	alwaysOutputData: boolean;
	retryOnFail: boolean;
	executeOnce: boolean;
}

let db: Awaited<ReturnType<typeof testDatabase>>;
let engine: Engine;
let closedPort: number;
const OK = { id: 'ok', name: 'ok' };
const DOWN = { id: 'down', name: 'down' };

async function freePort(): Promise<number> {
	return new Promise((resolve) => {
		const srv = net.createServer();
		srv.listen(0, '127.0.0.1', () => {
			const port = (srv.address() as net.AddressInfo).port;
			srv.close(() => resolve(port));
		});
	});
}

beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_engine' });
	closedPort = await freePort();
	engine = new Engine({
		credentials: {
			ok: testCredentials(DATABASE_URL, db.schema) as never,
			down: testCredentials(DATABASE_URL.replace(/@[^/]+\//, `@127.0.0.1:${closedPort}/`), db.schema) as never,
		},
	});
});
afterAll(async () => {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	await (require(`${ROOT}/dist/src/db/pool.js`) as { closeAllPools(): Promise<void> }).closeAllPools();
	await closeSrcPools();
	await db.drop();
});

const q = async <T = Record<string, unknown>>(sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows as T[];

/** Two unknown operations for target `t` (reserved, then confirmed unknown). */
async function seedUnknown(t: string) {
	for (const k of ['a', 'b']) {
		const key = `${t}:${k}`;
		const [r] = await reserveOperations(db.pool, db.schemaSql, [prepareReserveItem(0, { operationKey: key, request: { key }, leaseSeconds: 60, target: t })]);
		await confirmOperations(db.pool, db.schemaSql, [prepareConfirmItem(0, { operationKey: key, leaseToken: r.leaseToken, outcome: 'unknown', reason: 'HTTP 504' })]);
		// Its settle window (issue 11) has passed, so Claim may take it now.
		await q(`UPDATE ${db.schemaSql}.operations SET settle_until = now() - interval '1 second' WHERE operation_key = $1`, [key]);
	}
}

/** A node of this package (version 1, its only version) with the settings under test. */
function ut(type: string, parameters: INode['parameters'], s: Settings, down: boolean): INode {
	return node('UT', `${PKG}.${type}`, parameters, {
		typeVersion: 1,
		credentials: { operationLedgerPostgresApi: down ? DOWN : OK },
		onError: s.onError,
		alwaysOutputData: s.alwaysOutputData,
		retryOnFail: s.retryOnFail,
		maxTries: 2,
		waitBetweenTries: 1,
		executeOnce: s.executeOnce,
	});
}
/** A helper node of this package upstream of the one under test (plain settings). */
function pre(name: string, type: string, parameters: INode['parameters']): INode {
	return node(name, `${PKG}.${type}`, parameters, { typeVersion: 1, credentials: { operationLedgerPostgresApi: OK } });
}

interface Scenario {
	name: string;
	modes: Mode[];
	/** Which input item is the invalid one in mode "invalid". */
	invalidItem: 0 | 1;
	/** The node's output names (index 0 is Unrecorded). */
	outputs: string[];
	/** Go-ahead output indexes. */
	goAhead: number[];
	/** The outputs that belong to the node's other operations, which must receive nothing. */
	othersOutputs?: number[];
	seed?(id: string): Promise<void>;
	/** Builds the workflow; the node under test is "UT", fed (directly or through helpers) by "Source". */
	build(id: string, mode: Mode, s: Settings): { nodes: INode[]; feeds: Record<string, string[][]> };
	/** Asserts that the database decided this go-ahead item in this run. */
	decided(item: INodeExecutionData, output: number): Promise<void>;
}

const bad = (mode: Mode) => mode === 'invalid';

/** Reserve Operation's outputs. */
const RESERVE_OUTPUTS = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'];
/** Reconcile Unknown: the same outputs for Claim and Resolve (nodes/ReconcileUnknown/outputs.ts). */
const RECONCILE_OUTPUTS = ['Unrecorded', 'To Check', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];
/** Operation Ledger Admin: the same outputs for every operation (nodes/OperationLedgerAdmin/outputs.ts). */
const ADMIN_OUTPUTS = ['Unrecorded', 'Result', 'Settled', 'Refused'];

/**
 * A settle operation (complete, fail, release, extend lease) on the tasks a plain Dequeue claimed.
 * Its result is not a go-ahead, but it must hold only answers of the database: `outcomes` lists
 * those this test accepts (a retry replays `already_settled` for a task the first try settled).
 */
function settleScenario(op: string, params: INode['parameters'], outcomes: string[]): Scenario {
	return {
		name: `Dequeue ${op}`,
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ['Unrecorded', 'Result'],
		goAhead: [1],
		seed: async (id) => {
			await enqueue(db.pool, db.schema, [{ queue: id, group: 'normal', payload: { n: 1 } }, { queue: id, group: 'normal', payload: { n: 2 } }]);
		},
		build: (id, mode, s) => ({
			nodes: [
				source([{ bad: bad(mode) }]),
				pre('Dequeue', 'priorityDequeue', { resource: 'task', operation: 'dequeue', queue: id, batchSize: 10, leaseSeconds: 300, options: {} }),
				ut(
					'priorityDequeue',
					{
						resource: 'task',
						operation: op,
						taskSource: 'explicit',
						taskId: '={{ $json.taskId }}',
						leaseToken: "={{ $('Source').first().json.bad && $itemIndex === 1 ? 'not-a-token' : $json.leaseToken }}",
						...params,
					},
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['Dequeue']], Dequeue: [[], ['UT']] },
		}),
		async decided(item) {
			expect(outcomes).toContain(item.json.outcome);
			expect(typeof item.json.taskId).toBe('string');
		},
	};
}

const scenarios: Scenario[] = [
	{
		name: 'Reserve',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: RESERVE_OUTPUTS,
		goAhead: [1],
		build: (id, mode, s) => ({
			nodes: [
				source([{ k: `${id}:a` }, { k: bad(mode) ? '' : `${id}:b` }]),
				ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, mode === 'down'),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided(item) {
			const ledger = item.json.ledger as { operationKey: string; leaseToken: string; outcome: string };
			expect(ledger.outcome).toBe('proceed');
			// Tokens are stored only as SHA-256 hashes (issue 11).
			const rows = await q(`SELECT status, lease_token_hash = sha256(uuid_send($2::uuid)) AS t FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [ledger.operationKey, ledger.leaseToken]);
			expect(rows).toEqual([{ status: 'reserved', t: true }]);
		},
	},
	{
		name: 'Confirm',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Stale', 'To Review'],
		goAhead: [1],
		build: (id, mode, s) => ({
			nodes: [
				source([{ k: `${id}:a` }, { k: `${id}:b`, bad: bad(mode) }]),
				pre('Reserve', 'reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }),
				ut(
					'confirmOperation',
					{ outcomeSource: 'explicit', outcome: "={{ $json.bad ? 'bogus' : 'succeeded' }}", externalReference: 'ref-1', lineage: 'auto', options: {} },
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['Reserve']], Reserve: [[], ['UT']] },
		}),
		async decided(item) {
			const ledger = item.json.ledger as { operationKey: string; status: string };
			expect(ledger.status).toBe('succeeded');
			expect(await q(`SELECT status FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [ledger.operationKey])).toEqual([{ status: 'succeeded' }]);
		},
	},
	{
		name: 'Reconcile claim',
		modes: ['valid', 'invalid', 'down', 'nothing'],
		invalidItem: 0,
		outputs: RECONCILE_OUTPUTS,
		goAhead: [1],
		othersOutputs: [2, 3, 4, 5, 6],
		seed: seedUnknown,
		build: (id, mode, s) => ({
			nodes: [
				source([{ bad: bad(mode) }, {}]),
				ut(
					'reconcileUnknown',
					{ operation: 'claim', batchSize: '={{ $json.bad ? 0 : 10 }}', settleSeconds: 0, claimSeconds: 300, target: mode === 'nothing' ? `${id}:none` : id },
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided(item) {
			const rec = item.json.reconcile as { operationKey: string; claimToken: string };
			const rows = await q(`SELECT status, claim_token_hash = sha256(uuid_send($2::uuid)) AS t FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [rec.operationKey, rec.claimToken]);
			expect(rows).toEqual([{ status: 'unknown', t: true }]);
		},
	},
	{
		name: 'Reconcile resolve',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: RECONCILE_OUTPUTS,
		goAhead: [2, 3],
		othersOutputs: [1],
		seed: seedUnknown,
		build: (id, mode, s) => ({
			nodes: [
				source([{ bad: bad(mode) }]),
				pre('Claim', 'reconcileUnknown', { operation: 'claim', batchSize: 10, settleSeconds: 0, claimSeconds: 300, target: id }),
				ut(
					'reconcileUnknown',
					{
						operation: 'resolve',
						lineage: 'auto',
						lookupSource: 'explicit',
						resolution: "={{ $('Source').first().json.bad && $itemIndex === 1 ? 'bogus' : ($itemIndex === 0 ? 'happened' : 'not_happened') }}",
						externalReference: 'found-1',
						reason: '',
						maxChecks: 5,
						backoffBaseSeconds: 60,
						backoffMaxSeconds: 3600,
					},
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['Claim']], Claim: [[], ['UT']] },
		}),
		async decided(item, output) {
			const rec = item.json.reconcile as { operationKey: string; status: string };
			// Output 2 is Succeeded (happened), output 3 Failed (did not happen).
			const want = output === 2 ? 'succeeded' : 'failed';
			expect(rec.status).toBe(want);
			expect(await q(`SELECT status FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [rec.operationKey])).toEqual([{ status: want }]);
		},
	},
	{
		name: 'Dequeue dequeue',
		modes: ['valid', 'invalid', 'down', 'nothing'],
		invalidItem: 0,
		outputs: ['Unrecorded', 'Result'],
		goAhead: [1],
		seed: async (id) => {
			await enqueue(db.pool, db.schema, [{ queue: id, group: 'normal', payload: { n: 1 } }, { queue: id, group: 'normal', payload: { n: 2 } }]);
		},
		build: (id, mode, s) => ({
			nodes: [
				source([{ bad: bad(mode) }, {}]),
				ut(
					'priorityDequeue',
					{
						resource: 'task',
						operation: 'dequeue',
						queue: mode === 'nothing' ? `${id}-none` : id,
						batchSize: '={{ $json.bad ? 0 : 10 }}',
						leaseSeconds: 300,
						priorityGroups: { group: [{ name: 'high', weight: 5 }, { name: 'normal', weight: 2 }, { name: 'low', weight: 1 }] },
						options: {},
					},
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided(item) {
			const rows = await q(`SELECT status, lease_token::text AS t FROM ${db.schemaSql}.queue_tasks WHERE id = $1`, [item.json.taskId]);
			expect(rows).toEqual([{ status: 'processing', t: item.json.leaseToken }]);
		},
	},
	{
		name: 'Dequeue enqueue',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ['Unrecorded', 'Result'],
		goAhead: [1],
		build: (id, mode, s) => ({
			nodes: [
				source([{ n: 1 }, { n: 2, bad: bad(mode) }]),
				ut(
					'priorityDequeue',
					{ resource: 'task', operation: 'enqueue', queue: id, priorityGroup: 'normal', payload: "={{ $json.bad ? '{bad' : '{}' }}", dedupeKey: '', options: {} },
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided(item) {
			expect(await q(`SELECT status FROM ${db.schemaSql}.queue_tasks WHERE id = $1`, [item.json.taskId])).toEqual([{ status: 'pending' }]);
		},
	},
	settleScenario('complete', {}, ['completed', 'already_settled']),
	settleScenario('fail', { errorMessage: 'boom', options: { backoffBaseSeconds: 5, backoffCapSeconds: 60 } }, ['retry_scheduled', 'already_settled']),
	settleScenario('release', { options: {} }, ['released', 'already_settled', 'lease_lost']),
	settleScenario('extendLease', { leaseSeconds: 600 }, ['extended']),
	{
		name: 'Dequeue stats',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ['Unrecorded', 'Result'],
		goAhead: [],
		build: (id, mode, s) => ({
			nodes: [
				source([{ q: id }, { q: bad(mode) ? '' : id }]),
				ut('priorityDequeue', { resource: 'queue', operation: 'stats', queue: '={{ $json.q }}', options: {} }, s, mode === 'down'),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided() {
			// Not a go-ahead output.
		},
	},
];

/**
 * An Operation Ledger Admin look-up or maintenance operation (Result, output 1): not a go-ahead,
 * but Result must hold only answers of the database. `params(bad)` gives the node's parameters; `items`
 * the Source items (the invalid one is `invalidItem`).
 */
function adminScenario(
	op: string,
	invalidItem: 0 | 1,
	items: (id: string, mode: Mode) => object[],
	params: (id: string) => INode['parameters'],
	seed?: (id: string) => Promise<void>,
): Scenario {
	return {
		name: `Admin ${op}`,
		modes: ['valid', 'invalid', 'down'],
		invalidItem,
		outputs: ADMIN_OUTPUTS,
		goAhead: [],
		othersOutputs: [2, 3],
		seed,
		build: (id, mode, s) => ({
			nodes: [source(items(id, mode)), ut('operationLedgerAdmin', { operation: op, ...params(id) }, s, mode === 'down')],
			feeds: { Source: [['UT']] },
		}),
		async decided() {
			// Not a go-ahead output.
		},
	};
}

scenarios.push(
	{
		name: 'Admin settle by hand',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ADMIN_OUTPUTS,
		goAhead: [2],
		othersOutputs: [1],
		seed: seedUnknown,
		build: (id, mode, s) => ({
			nodes: [
				source([{ k: `${id}:a` }, { k: `${id}:b`, bad: bad(mode) }]),
				ut(
					'operationLedgerAdmin',
					{
						operation: 'settle',
						operationKey: '={{ $json.k }}',
						decision: "={{ $json.bad ? 'bogus' : ($itemIndex === 0 ? 'happened' : 'not_happened') }}",
						externalReference: 'found-by-hand',
						reason: 'checked the provider dashboard',
						decidedBy: 'alice@example.com',
					},
					s,
					mode === 'down',
				),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided(item) {
			const ledger = item.json.ledger as { operationKey: string; result: string; status: string; decidedBy: string };
			expect(ledger.result).toBe('settled');
			expect(['succeeded', 'failed']).toContain(ledger.status);
			expect(ledger.decidedBy).toBe('alice@example.com');
			const rows = await q(`SELECT status, settled_by FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [ledger.operationKey]);
			expect(rows).toEqual([{ status: ledger.status, settled_by: 'alice@example.com' }]);
		},
	},
	adminScenario(
		'get',
		1,
		(id, mode) => [{ k: `${id}:a` }, { k: bad(mode) ? '' : `${id}:b` }],
		() => ({ operationKey: '={{ $json.k }}', maxEvents: 50 }),
		seedUnknown,
	),
	adminScenario(
		'list',
		1,
		(id, mode) => [{}, { bad: bad(mode) }],
		(id) => ({ kind: 'unknown', minAgeSeconds: 0, target: id, limit: '={{ $json.bad ? 0 : 50 }}', cursor: '', listOutput: 'items' }),
		seedUnknown,
	),
	adminScenario('health', 0, (_id, mode) => [{ bad: bad(mode) }, {}], () => ({ days: '={{ $json.bad ? -1 : 7 }}' })),
	adminScenario('compact', 0, (_id, mode) => [{ bad: bad(mode) }, {}], () => ({ olderThanDays: '={{ $json.bad ? -1 : 3650 }}', batchSize: 100, maxBatches: 2, maxDurationSeconds: 10, statementTimeoutMs: 10000 })),
	adminScenario('hardDelete', 0, (_id, mode) => [{ bad: bad(mode) }, {}], () => ({ acknowledge: true, olderThanDays: '={{ $json.bad ? -1 : 3650 }}', batchSize: 100, maxBatches: 2, maxDurationSeconds: 10, statementTimeoutMs: 10000 })),
);

const ON_ERROR: OnError[] = ['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput'];
const BOOL = [false, true];
const allSettings: Settings[] = ON_ERROR.flatMap((onError) =>
	BOOL.flatMap((alwaysOutputData) => BOOL.flatMap((retryOnFail) => BOOL.map((executeOnce) => ({ onError, alwaysOutputData, retryOnFail, executeOnce })))),
);
const label = (s: Settings) =>
	`${s.onError}${s.alwaysOutputData ? ' +alwaysOutputData' : ''}${s.retryOnFail ? ' +retryOnFail' : ''}${s.executeOnce ? ' +executeOnce' : ''}`;

let caseNo = 0;

/** Runs one case and asserts the invariant plus where the failures went. Returns a short record. */
async function runCase(sc: Scenario, mode: Mode, s: Settings): Promise<string[]> {
	const problems: string[] = [];
	const id = `eng${process.pid}c${++caseNo}`;
	if (sc.seed && mode !== 'nothing') await sc.seed(id);
	const { nodes, feeds } = sc.build(id, mode, s);
	const names = [...sc.outputs];
	if (s.onError === 'continueErrorOutput') names.push('Error');
	const sinkNames = names.map((n) => `UT → ${n}`);
	const { run, received } = await engine.run([...nodes, ...sinkNames.map(sink)], connect({ ...feeds, UT: sinkNames.map((n) => [n]) }));
	const got = (i: number): INodeExecutionData[] => (received as Received)[sinkNames[i]] ?? [];
	const tag = `${sc.name} ${mode} ${label(s)}`;
	const check = (ok: boolean, what: string) => {
		if (!ok) problems.push(`${tag}: ${what} (received ${JSON.stringify(Object.fromEntries(sinkNames.map((n, i) => [n, got(i).map((it) => it.json)])))}; error ${runError(run)})`);
	};

	// The invariant: every item on a go-ahead output was decided by the database in this run.
	for (const o of sc.goAhead) {
		for (const item of got(o)) {
			check(!('error' in item.json), `error item on go-ahead output ${names[o]}`);
			check(Object.keys(item.json).length > 0, `empty item on go-ahead output ${names[o]}`);
			try {
				await sc.decided(item, o);
			} catch (e) {
				check(false, `item on ${names[o]} not decided by the database: ${(e as Error).message.split('\n').slice(0, 6).join(' ')}`);
			}
		}
	}
	// No error item on any result output (anything but Unrecorded and Error).
	const resultOutputs = names.map((_, i) => i).filter((i) => names[i] !== 'Error' && i !== 0);
	for (const o of resultOutputs) for (const item of got(o)) check(!('error' in item.json), `error item on result output ${names[o]}`);

	// One output list for all operations: another operation's outputs stay empty, whatever happened.
	for (const o of sc.othersOutputs ?? []) check(got(o).length === 0, `items on ${names[o]}, an output of another operation`);

	// Where failures went.
	const fails = mode === 'down' || (mode === 'invalid' && !(s.executeOnce && sc.invalidItem === 1));
	const errorItems = names.flatMap((_, i) => got(i).filter((it) => 'error' in it.json));
	if (s.onError === 'stopWorkflow') {
		check(fails === (runError(run) !== undefined), `run error expected ${fails}`);
		if (fails) check(names.every((_, i) => got(i).length === 0), 'nothing may leave a node that stopped the workflow');
	} else {
		check(runError(run) === undefined, 'the run should not fail under Continue');
		if (fails) check(errorItems.length > 0, 'error items expected');
		if (s.onError === 'continueErrorOutput') check(errorItems.every((it) => got(names.length - 1).includes(it)), 'error items must be on the Error output');
		else check(errorItems.every((it) => got(0).includes(it)), 'error items must be on Unrecorded');
	}
	if (s.alwaysOutputData && s.onError !== 'stopWorkflow' && mode === 'nothing') {
		check(got(0).length === 1 && Object.keys(got(0)[0].json).length === 0, 'Always Output Data: the empty item goes to Unrecorded');
	}
	if (mode === 'valid') {
		check(runError(run) === undefined, 'a valid run must not fail');
		check(sc.goAhead.length === 0 || sc.goAhead.some((o) => got(o).length > 0), 'valid items reach a go-ahead output');
	}
	return problems;
}

describe('fail-closed outputs in n8n-core WorkflowExecute (every node at version 1)', () => {
	for (const sc of scenarios) {
		test(`${sc.name}: ${sc.modes.join(', ')} × every On Error × Always Output Data × Retry On Fail × Execute Once`, async () => {
			const problems: string[] = [];
			let cases = 0;
			for (const mode of sc.modes) {
				for (const s of allSettings) {
					problems.push(...(await runCase(sc, mode, s)));
					cases++;
				}
			}
			expect(problems).toEqual([]);
			expect(cases).toBe(sc.modes.length * 24);
		});
	}
});

const reserveParams = { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 };
const plain = (over: Partial<Settings> = {}): Settings => ({ onError: 'stopWorkflow', alwaysOutputData: false, retryOnFail: false, executeOnce: false, ...over });
/**
 * The output names the built node declares (dist/), in order: the regression tests below wire their
 * sinks by these, so they test the node as n8n sees it, whatever its layout.
 */
function declaredOutputs(type: string): string[] {
	const outputs = (engine.nodeTypes().getByName(`${PKG}.${type}`).description as INodeTypeDescription).outputs as Array<{ displayName: string }>;
	return outputs.map((o) => o.displayName);
}
/** Sinks for `outs`, plus the Error output n8n appends under Continue (using error output). */
const withError = (outs: string[], s: Settings) => (s.onError === 'continueErrorOutput' ? [...outs, 'Error'] : outs);

/**
 * The cases that failed only on the older node versions the package carried before its first
 * release (issue 22), run at version 1, the only version now. Each was seen to fail with the old
 * behaviour put back (Proceed on output 0; Wake Up firing on a bare notification).
 */
describe('what failed on the pre-release node versions holds at version 1', () => {
	// n8n's Retry On Fail retries a node whose output 0 starts with an item carrying json.error and
	// throws the first try's output away. Reserve copies the input json onto its results, so an
	// input field named `error` (an HTTP Request node's error item, a form field) once made n8n
	// retry a Reserve whose output 0 was Proceed: the retry answered In Progress and the five
	// granted Proceed items were lost. Output 0 is Unrecorded now.
	test('Retry On Fail keeps the granted Proceed items of a Reserve whose input items carry a field named error (every On Error mode)', async () => {
		for (const onError of ON_ERROR) {
			const id = `eng${process.pid}:errfield:${onError}`;
			const s = plain({ onError, retryOnFail: true });
			const keys = Array.from({ length: 5 }, (_, i) => `${id}:${i}`);
			const outs = withError(declaredOutputs('reserveOperation'), s);
			const input = keys.map((k, i) => (i % 2 === 0 ? { k, error: { message: '502 - "bad gateway"', httpCode: '502' } } : { k, error: 'upstream said no' }));
			const { run, received } = await engine.run(
				[source(input), ut('reserveOperation', reserveParams, s, false), ...outs.map(sink)],
				connect({ Source: [['UT']], UT: outs.map((o) => [o]) }),
			);
			expect({ onError, error: runError(run) }).toEqual({ onError, error: undefined });
			const proceed = received['Proceed'] ?? [];
			expect({ onError, proceed: proceed.map((it) => (it.json.ledger as { operationKey: string }).operationKey) }).toEqual({ onError, proceed: keys });
			for (const item of proceed) await scenarios[0].decided(item, 1);
			expect({ onError, others: outs.filter((o) => o !== 'Proceed').flatMap((o) => received[o] ?? []) }).toEqual({ onError, others: [] });
		}
	});

	// Anyone who can connect to the database may NOTIFY any channel: NOTIFY needs no privilege. The
	// oldest pre-release trigger started an execution for every notification it got in Wake Up mode
	// (120 empty executions in 10 s). A notification is a hint now: Wake Up checks for due work of
	// its groups first, Claim Tasks starts an execution only for tasks it claimed.
	test('a NOTIFY forged by a role without any privilege starts no execution of the trigger (Wake Up and Claim Tasks, 10 s)', async () => {
		const role = `ol_forger_${process.pid}`;
		await db.pool.query(`DROP ROLE IF EXISTS ${role}`);
		await db.pool.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT`);
		const url = new URL(DATABASE_URL);
		url.username = role;
		url.password = '';
		const forger = new Client({ connectionString: url.toString() });
		const active: Array<Awaited<ReturnType<Engine['activate']>>> = [];
		try {
			await forger.connect();
			// It can read and change nothing of the queue.
			await expect(forger.query(`SELECT count(*) FROM ${db.schemaSql}.queue_tasks`)).rejects.toThrow(/permission denied/);
			const { rows: privileged } = await db.pool.query(`SELECT has_schema_privilege($1, $2, 'USAGE') AS usage`, [role, db.schema]);
			expect(privileged).toEqual([{ usage: false }]);

			const queues = { wakeUp: `forged-wake-${process.pid}`, claim: `forged-claim-${process.pid}` };
			for (const mode of ['wakeUp', 'claim'] as const) {
				const trigger = node('Trigger', `${PKG}.priorityDequeueTrigger`, {
					queue: queues[mode],
					mode,
					priorityGroups: { group: [{ name: 'high', weight: 5 }, { name: 'normal', weight: 2 }, { name: 'low', weight: 1 }] },
					batchSize: 10,
					leaseSeconds: 60,
					useListen: true,
					// Polling once an hour: only notifications could start an execution here.
					pollSeconds: 3600,
					maxInFlight: 1,
					maxPerMinute: 6000,
					options: {},
				}, { credentials: { operationLedgerPostgresApi: OK } });
				active.push(await engine.activate([trigger, sink(`After ${mode}`)], connect({ Trigger: [[`After ${mode}`]] }), 'Trigger'));
			}
			const channels = Object.values(queues).map((q) => queueChannel(db.schema, q));
			// Both triggers listen before the forging starts.
			for (let t = 0; t < 5000; t += 50) {
				const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = ANY($1)`, [channels.map((c) => `LISTEN ${c}`)]);
				if (rows[0].n === 2) break;
				await sleep(50);
			}
			const { rows: listening } = await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = ANY($1)`, [channels.map((c) => `LISTEN ${c}`)]);
			expect(listening).toEqual([{ n: 2 }]);

			let sent = 0;
			const until = Date.now() + 10_000;
			while (Date.now() < until) {
				for (const q of Object.values(queues)) {
					// The payload a real enqueue sends (the queue name: ready work), and the empty one.
					await forger.query(`SELECT pg_notify($1, $2)`, [queueChannel(db.schema, q), sent % 2 === 0 ? q : '']);
					sent++;
				}
				await sleep(20);
			}
			await sleep(500);
			expect(sent).toBeGreaterThan(200);
			expect(active.map((a) => ({ emits: a.emits.length, runs: a.runs.length, errors: a.errors }))).toEqual([
				{ emits: 0, runs: 0, errors: [] },
				{ emits: 0, runs: 0, errors: [] },
			]);

			// Positive control: real work starts executions through the same LISTEN connections.
			await enqueue(db.pool, db.schema, [{ queue: queues.wakeUp, group: 'high', payload: { real: 1 } }]);
			await enqueue(db.pool, db.schema, [{ queue: queues.claim, group: 'high', payload: { real: 2 } }]);
			for (let t = 0; t < 5000 && active.some((a) => a.runs.length === 0); t += 50) await sleep(50);
			expect(active.map((a) => a.runs.length > 0)).toEqual([true, true]);
			expect(active[1].emits[0].items.map((it) => it.json.payload)).toEqual([{ real: 2 }]);
		} finally {
			await Promise.all(active.map((a) => a.close()));
			await forger.end().catch(() => undefined);
			await db.pool.query(`DROP ROLE IF EXISTS ${role}`);
		}
	});

	// n8n adds an empty item {} on output 0 whenever output 0 is empty, even when other outputs
	// hold items. Output 0 was Proceed (or Succeeded, To Check, the claimed tasks) in the oldest
	// pre-release versions; it is Unrecorded now. One run per node in which its go-ahead outputs stay empty.
	test('Always Output Data never puts {} on Proceed or any other go-ahead output (every node, every On Error mode)', async () => {
		const cases: Array<{ name: string; type: string; goAhead: string[]; build(id: string, s: Settings): Promise<{ nodes: INode[]; feeds: Record<string, string[][]> }> }> = [
			{
				name: 'Reserve of a key that is in progress',
				type: 'reserveOperation',
				goAhead: ['Proceed'],
				build: async (id, s) => {
					await reserveOperations(db.pool, db.schemaSql, [prepareReserveItem(0, { operationKey: id, request: { k: id }, leaseSeconds: 300, target: 't' })]);
					return { nodes: [source([{ k: id }]), ut('reserveOperation', reserveParams, s, false)], feeds: { Source: [['UT']] } };
				},
			},
			{
				name: 'Confirm with a lost lease (Stale)',
				type: 'confirmOperation',
				goAhead: ['Succeeded'],
				build: async (id, s) => {
					await reserveOperations(db.pool, db.schemaSql, [prepareReserveItem(0, { operationKey: id, request: { k: id }, leaseSeconds: 300, target: 't' })]);
					const params = { outcomeSource: 'explicit', outcome: 'succeeded', externalReference: 'r', lineage: 'explicit', operationKey: id, leaseToken: '11111111-2222-4333-8444-555555555555', options: {} };
					return { nodes: [source([{}]), ut('confirmOperation', params, s, false)], feeds: { Source: [['UT']] } };
				},
			},
			{
				name: 'Reconcile Claim with nothing due',
				type: 'reconcileUnknown',
				goAhead: ['To Check'],
				build: async (id, s) => ({
					nodes: [source([{}]), ut('reconcileUnknown', { operation: 'claim', batchSize: 10, settleSeconds: 0, claimSeconds: 300, target: `${id}:none` }, s, false)],
					feeds: { Source: [['UT']] },
				}),
			},
			{
				name: 'Reconcile Resolve, still unknown',
				type: 'reconcileUnknown',
				goAhead: ['Succeeded', 'Failed'],
				build: async (id, s) => {
					await seedUnknown(id);
					const resolve = { operation: 'resolve', lineage: 'auto', lookupSource: 'explicit', resolution: 'still_unknown', externalReference: '', reason: 'still looking', maxChecks: 5, backoffBaseSeconds: 60, backoffMaxSeconds: 3600 };
					return {
						nodes: [source([{}]), pre('Claim', 'reconcileUnknown', { operation: 'claim', batchSize: 10, settleSeconds: 0, claimSeconds: 300, target: id }), ut('reconcileUnknown', resolve, s, false)],
						feeds: { Source: [['Claim']], Claim: [[], ['UT']] },
					};
				},
			},
			{
				name: 'Dequeue of an empty queue',
				type: 'priorityDequeue',
				goAhead: ['Result'],
				build: async (id, s) => ({
					nodes: [
						source([{}]),
						ut('priorityDequeue', { resource: 'task', operation: 'dequeue', queue: `${id}-empty`, batchSize: 10, leaseSeconds: 300, priorityGroups: { group: [{ name: 'normal', weight: 1 }] }, options: {} }, s, false),
					],
					feeds: { Source: [['UT']] },
				}),
			},
			{
				name: 'Settle by Hand of an operation settled before (Refused)',
				type: 'operationLedgerAdmin',
				goAhead: ['Settled'],
				build: async (id, s) => {
					await seedUnknown(id);
					const settle = { operation: 'settle', operationKey: `${id}:a`, decision: 'happened', externalReference: 'r', reason: 'seen', decidedBy: 'alice' };
					await engine.run([source([{}]), ut('operationLedgerAdmin', settle, plain(), false)], connect({ Source: [['UT']] }));
					return { nodes: [source([{}]), ut('operationLedgerAdmin', { ...settle, decidedBy: 'bob' }, s, false)], feeds: { Source: [['UT']] } };
				},
			},
		];
		const problems: string[] = [];
		for (const c of cases) {
			for (const onError of ON_ERROR) {
				const s = plain({ onError, alwaysOutputData: true });
				const id = `eng${process.pid}:aod${++caseNo}`;
				const { nodes, feeds } = await c.build(id, s);
				const outs = withError(declaredOutputs(c.type), s);
				const { run, received } = await engine.run([...nodes, ...outs.map(sink)], connect({ ...feeds, UT: outs.map((o) => [o]) }));
				const tag = `${c.name} (${onError})`;
				if (runError(run) !== undefined) problems.push(`${tag}: run failed: ${runError(run)}`);
				for (const g of c.goAhead) if ((received[g] ?? []).length > 0) problems.push(`${tag}: ${g} received ${JSON.stringify(received[g].map((it) => it.json))}`);
				// The engine's own empty item is on Unrecorded, alone.
				const unrecorded = (received['Unrecorded'] ?? []).map((it) => it.json);
				if (JSON.stringify(unrecorded) !== '[{}]') problems.push(`${tag}: Unrecorded received ${JSON.stringify(unrecorded)}, expected [{}]`);
			}
		}
		expect(problems).toEqual([]);
	});
});

describe('pinned data', () => {
	test('pinned output of Reserve goes to Unrecorded (n8n replays pins on output 0), never to Proceed', async () => {
		const outs = ['Unrecorded', 'Proceed'];
		const { run, received } = await engine.run(
			[source([{ k: 'pinned' }]), ut('reserveOperation', reserveParams, plain(), true), ...outs.map(sink)],
			connect({ Source: [['UT']], UT: outs.map((o) => [o]) }),
			{ mode: 'manual', pinData: { UT: [{ json: { ledger: { outcome: 'proceed', leaseToken: 'pinned' } } }] } },
		);
		expect(runError(run)).toBeUndefined();
		expect(received['Proceed']).toBeUndefined();
		expect(received['Unrecorded']).toHaveLength(1);
	});

	test('pinned output of Settle by Hand goes to Unrecorded (n8n replays pins on output 0), never to Settled', async () => {
		const { run, received } = await engine.run(
			[
				source([{ k: 'pinned:settle' }]),
				ut('operationLedgerAdmin', { operation: 'settle', operationKey: '={{ $json.k }}', decision: 'happened', externalReference: 'r', reason: 'x', decidedBy: 'alice' }, plain(), true),
				...ADMIN_OUTPUTS.map(sink),
			],
			connect({ Source: [['UT']], UT: ADMIN_OUTPUTS.map((o) => [o]) }),
			{ mode: 'manual', pinData: { UT: [{ json: { ledger: { result: 'settled', status: 'succeeded' } } }] } },
		);
		expect(runError(run)).toBeUndefined();
		expect(received['Settled']).toBeUndefined();
		expect(received['Unrecorded']).toHaveLength(1);
	});
});

describe('partial runs from the editor', () => {
	const s: Settings = { onError: 'continueRegularOutput', alwaysOutputData: false, retryOnFail: false, executeOnce: false };
	const outs = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress'];
	const build = (key: string, down: boolean) => ({
		nodes: [
			source([{ k: key }]),
			ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, down),
			...outs.map(sink),
		],
		conns: connect({ Source: [['UT']], UT: outs.map((o) => [o]) }),
	});

	test('Execute step on Reserve after a run: Reserve runs again and answers In Progress, not a second Proceed', async () => {
		const w = build(`eng${process.pid}:partial:1`, false);
		const first = await engine.run(w.nodes, w.conns, { mode: 'manual' });
		expect(first.received['Proceed']).toHaveLength(1);
		const again = await runPartial(engine, w.nodes, w.conns, first.run, 'UT', ['UT']);
		expect(runError(again.run)).toBeUndefined();
		const out = again.run.data.resultData.runData['UT'].at(-1)!.data!.main;
		expect(out[1]).toEqual([]);
		expect(out[3]).toHaveLength(1);
	});

	test('Execute step on Reserve with the database down: the error item is on Unrecorded', async () => {
		const w = build(`eng${process.pid}:partial:2`, true);
		const first = await engine.run(w.nodes, w.conns, { mode: 'manual' });
		const again = await runPartial(engine, w.nodes, w.conns, first.run, 'UT', ['UT']);
		const out = again.run.data.resultData.runData['UT'].at(-1)!.data!.main;
		expect(out[0]).toEqual([expect.objectContaining({ json: { error: expect.stringMatching(/database connection failed/), retryable: true } })]);
		expect(out.slice(1).every((o) => (o ?? []).length === 0)).toBe(true);
	});

	// n8n's partial execution reuses the earlier output of nodes that are not dirty: "Execute step"
	// on a node after Reserve hands it Reserve's earlier Proceed item again, with the same
	// idempotency key. Nothing in a node can prevent that; the README says so, and it is why the
	// write must carry ledger.idempotencyKey.
	test('Execute step on a node after Reserve reuses Reserve\'s earlier output (documented)', async () => {
		const w = build(`eng${process.pid}:partial:3`, false);
		const first = await engine.run(w.nodes, w.conns, { mode: 'manual' });
		const key = (first.received['Proceed'][0].json.ledger as { idempotencyKey: string }).idempotencyKey;
		const again = await runPartial(engine, w.nodes, w.conns, first.run, 'Proceed');
		expect(again.run.data.resultData.runData['UT']).toHaveLength(1);
		expect((again.received['Proceed'][0].json.ledger as { idempotencyKey: string }).idempotencyKey).toBe(key);
	});
});

describe('Retry On Fail never gives a decided item a second go-ahead', () => {
	test('Confirm [good, bad] under Continue + Retry On Fail: the retry answers "repeated" for the item the first try recorded', async () => {
		const id = `eng${process.pid}:retry-c2`;
		const s: Settings = { onError: 'continueRegularOutput', alwaysOutputData: false, retryOnFail: true, executeOnce: false };
		const outs = ['Unrecorded', 'Succeeded'];
		const { received } = await engine.run(
			[
				source([{ k: `${id}:a` }, { k: `${id}:b`, bad: true }]),
				pre('Reserve', 'reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }),
				ut('confirmOperation', { outcomeSource: 'explicit', outcome: "={{ $json.bad ? 'bogus' : 'succeeded' }}", externalReference: 'ref', lineage: 'auto', options: {} }, s, false),
				...outs.map(sink),
			],
			connect({ Source: [['Reserve']], Reserve: [[], ['UT']], UT: outs.map((o) => [o]) }),
		);
		expect(received['Succeeded']?.map((it) => (it.json.ledger as { result: string }).result)).toEqual(['repeated']);
		expect(received['Unrecorded']).toHaveLength(1);
	});

	// n8n retries a node whose output 0 starts with an error item (and one that throws). Error items
	// go to output 0 (Unrecorded), so a batch with one bad item is retried after the database has
	// decided the good ones.
	test('Reserve [good, bad] under Continue + Retry On Fail: the good key answers In Progress on the retry, nothing reaches Proceed', async () => {
		const id = `eng${process.pid}:retry`;
		const s: Settings = { onError: 'continueRegularOutput', alwaysOutputData: false, retryOnFail: true, executeOnce: false };
		const outs = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress'];
		const { run, received } = await engine.run(
			[
				source([{ k: `${id}:a` }, { k: '' }]),
				ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, false),
				...outs.map(sink),
			],
			connect({ Source: [['UT']], UT: outs.map((o) => [o]) }),
		);
		expect(runError(run)).toBeUndefined();
		expect(run.data.resultData.runData['UT']).toHaveLength(1);
		expect(received['Proceed']).toBeUndefined();
		expect(received['In Progress']?.map((it) => (it.json.ledger as { operationKey: string }).operationKey)).toEqual([`${id}:a`]);
		expect(received['Unrecorded']?.map((it) => it.json.error)).toEqual([expect.stringMatching(/empty/)]);
		// One reservation, made by the first try; the retry changed nothing.
		const events = await q<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schemaSql}.operation_events WHERE operation_key = $1`, [`${id}:a`]);
		expect(events).toEqual([{ n: 1 }]);
	});

	test('Confirm under Stop + Retry On Fail: a batch that recorded one item then failed is retried and fails; Succeeded receives nothing, the recorded item stays recorded', async () => {
		const id = `eng${process.pid}:retry-confirm`;
		const s: Settings = { onError: 'stopWorkflow', alwaysOutputData: false, retryOnFail: true, executeOnce: false };
		const outs = ['Unrecorded', 'Succeeded'];
		const { run, received } = await engine.run(
			[
				source([{ k: `${id}:a` }, { k: `${id}:b` }]),
				pre('Reserve', 'reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }),
				// Item 1 names a key that was never reserved: the database records item 0, then the node throws for item 1.
				ut(
					'confirmOperation',
					{ outcomeSource: 'explicit', outcome: 'succeeded', externalReference: 'ref', lineage: 'explicit', operationKey: `={{ $itemIndex === 1 ? 'never:reserved:${id}' : $json.ledger.operationKey }}`, leaseToken: '={{ $json.ledger.leaseToken }}', options: {} },
					s,
					false,
				),
				...outs.map(sink),
			],
			connect({ Source: [['Reserve']], Reserve: [[], ['UT']], UT: outs.map((o) => [o]) }),
		);
		expect(runError(run)).toMatch(/No reservation exists/);
		expect(received['Succeeded']).toBeUndefined();
		const rows = await q(`SELECT operation_key, status FROM ${db.schemaSql}.operations WHERE operation_key LIKE $1 ORDER BY 1`, [`${id}:%`]);
		expect(rows).toEqual([
			{ operation_key: `${id}:a`, status: 'succeeded' },
			{ operation_key: `${id}:b`, status: 'reserved' },
		]);
	});
});

describe('editor runs and agents', () => {
	test('a manual run of Reserve adds a hint that it made a real reservation; a production run does not', async () => {
		const s: Settings = { onError: 'stopWorkflow', alwaysOutputData: false, retryOnFail: false, executeOnce: false };
		for (const mode of ['manual', 'trigger'] as const) {
			const { run } = await engine.run(
				[source([{ k: `eng${process.pid}:hint:${mode}` }]), ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, false)],
				connect({ Source: [['UT']] }),
				{ mode },
			);
			const hints = run.data.resultData.runData['UT'][0].hints ?? [];
			if (mode === 'manual') expect(hints).toEqual([expect.objectContaining({ type: 'warning', message: expect.stringMatching(/real reservation.*Clearing a test reservation/s) })]);
			else expect(hints).toEqual([]);
		}
	});

	test('no node of the package is usable as an AI tool (n8n hands an agent only output 0)', () => {
		for (const type of Object.keys((engine as unknown as { types: Record<string, unknown> }).types).filter((t) => t.startsWith(PKG))) {
			const d = engine.nodeTypes().getByName(type).description;
			expect({ type, usableAsTool: d.usableAsTool }).toEqual({ type, usableAsTool: undefined });
		}
	});
});

