/**
 * The fail-closed invariant in n8n's real engine (n8n-core 2.33.2 WorkflowExecute, built nodes from
 * dist/): an item reaches a go-ahead output (Reserve's Proceed, Confirm's Succeeded, Reconcile's To
 * Check, Succeeded (happened) and Failed (did not happen), Dequeue's claimed tasks, the Admin
 * node's Settled) only if the database decided it in this run.
 *
 * Matrix (node version 2): each node/operation × On Error (stop, continue regular output, continue
 * error output) × Always Output Data × Retry On Fail × Execute Once × items (valid, one invalid,
 * database down via a credential on a closed loopback port; Claim and Dequeue also "nothing due").
 * Each case asserts what reached each downstream sink, checking every go-ahead item against the
 * database. Version 1 runs a smaller matrix: no error item on a go-ahead output either.
 * Operation Ledger Admin's version 1 is fail-closed like the others' version 2 (Unrecorded first):
 * its Settle by Hand (go-ahead "Settled") and its other operations run the version-2 matrix at type
 * version 1, and have no legacy outputs for the version-1 matrix. Its version 2 (fixed outputs,
 * like Reconcile's version 3) runs the fixed-outputs matrix.
 */
import net from 'node:net';
import type { INode, INodeExecutionData } from 'n8n-workflow';
import { confirmOperations, prepareConfirmItem } from '../../src/ledger/confirm';
import { prepareReserveItem, reserveOperations } from '../../src/ledger/reserve';
import { enqueue } from '../../src/queue';
import { closeAllPools as closeSrcPools } from '../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../helpers/db';
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

/** A node of this package with the settings under test. */
function ut(type: string, parameters: INode['parameters'], s: Settings, version: number, down: boolean): INode {
	return node('UT', `${PKG}.${type}`, parameters, {
		typeVersion: version,
		credentials: { operationLedgerPostgresApi: down ? DOWN : OK },
		onError: s.onError,
		alwaysOutputData: s.alwaysOutputData,
		retryOnFail: s.retryOnFail,
		maxTries: 2,
		waitBetweenTries: 1,
		executeOnce: s.executeOnce,
	});
}
/** A helper node of this package upstream of the one under test (plain settings, version 2). */
function pre(name: string, type: string, parameters: INode['parameters']): INode {
	return node(name, `${PKG}.${type}`, parameters, { typeVersion: 2, credentials: { operationLedgerPostgresApi: OK } });
}

interface Scenario {
	name: string;
	modes: Mode[];
	/** Which input item is the invalid one in mode "invalid". */
	invalidItem: 0 | 1;
	/**
	 * Output names per matrix: 2 = the fail-closed layout (index 0 is Unrecorded), 1 = the legacy
	 * layout, 3 = the fixed outputs (the same for every operation, Unrecorded first).
	 */
	outputs: { 3?: string[]; 2: string[]; 1: string[] };
	/** Go-ahead output indexes per matrix. */
	goAhead: { 3?: number[]; 2: number[]; 1: number[] };
	/** Matrix 3: the outputs that belong to the node's other operations, which must receive nothing. */
	othersOutputs?: number[];
	/**
	 * The node's type version for each matrix when it is not the matrix's number (the Admin node:
	 * its version 1 is already fail-closed, so matrix 2 runs at type version 1 and matrix 3, the
	 * fixed outputs, at type version 2). Such a scenario has no legacy matrix 1.
	 */
	typeVersion?: { 2: number; 3: number };
	seed?(id: string): Promise<void>;
	/** Builds the workflow; the node under test is "UT", fed (directly or through helpers) by "Source". */
	build(id: string, mode: Mode, s: Settings, version: number): { nodes: INode[]; feeds: Record<string, string[][]> };
	/** Asserts that the database decided this go-ahead item in this run. */
	decided(item: INodeExecutionData, output: number, version: number): Promise<void>;
}

const bad = (mode: Mode) => mode === 'invalid';

/** Reconcile Unknown version 3: the same outputs for Claim and Resolve (nodes/ReconcileUnknown/outputs.ts). */
const RECONCILE_V3 = ['Unrecorded', 'To Check', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];

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
		outputs: { 2: ['Unrecorded', 'Result'], 1: ['Result'] },
		goAhead: { 2: [1], 1: [] },
		seed: async (id) => {
			await enqueue(db.pool, db.schema, [{ queue: id, group: 'normal', payload: { n: 1 } }, { queue: id, group: 'normal', payload: { n: 2 } }]);
		},
		build: (id, mode, s, v) => ({
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
					v,
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
		outputs: {
			2: ['Unrecorded', 'Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'],
			1: ['Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'],
		},
		goAhead: { 2: [1], 1: [0] },
		build: (id, mode, s, v) => ({
			nodes: [
				source([{ k: `${id}:a` }, { k: bad(mode) ? '' : `${id}:b` }]),
				ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, v, mode === 'down'),
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
		outputs: { 2: ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Stale'], 1: ['Succeeded', 'Failed', 'Unknown', 'Stale'] },
		goAhead: { 2: [1], 1: [0] },
		build: (id, mode, s, v) => ({
			nodes: [
				source([{ k: `${id}:a` }, { k: `${id}:b`, bad: bad(mode) }]),
				pre('Reserve', 'reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }),
				ut(
					'confirmOperation',
					{ outcomeSource: 'explicit', outcome: "={{ $json.bad ? 'bogus' : 'succeeded' }}", externalReference: 'ref-1', lineage: 'auto', options: {} },
					s,
					v,
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
		outputs: { 3: RECONCILE_V3, 2: ['Unrecorded', 'To Check'], 1: ['To Check'] },
		goAhead: { 3: [1], 2: [1], 1: [0] },
		othersOutputs: [2, 3, 4, 5, 6],
		seed: seedUnknown,
		build: (id, mode, s, v) => ({
			nodes: [
				source([{ bad: bad(mode) }, {}]),
				ut(
					'reconcileUnknown',
					{ operation: 'claim', batchSize: '={{ $json.bad ? 0 : 10 }}', settleSeconds: 0, claimSeconds: 300, target: mode === 'nothing' ? `${id}:none` : id },
					s,
					v,
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
		outputs: {
			3: RECONCILE_V3,
			2: ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'],
			1: ['Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'],
		},
		goAhead: { 3: [2, 3], 2: [1, 2], 1: [0, 1] },
		othersOutputs: [1],
		seed: seedUnknown,
		build: (id, mode, s, v) => ({
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
					v,
					mode === 'down',
				),
			],
			feeds: { Source: [['Claim']], Claim: [[], ['UT']] },
		}),
		async decided(item, output, v) {
			const rec = item.json.reconcile as { operationKey: string; status: string };
			// The first go-ahead output of this version is Succeeded (happened), the second Failed (did not happen).
			const want = output === { 3: 2, 2: 1, 1: 0 }[v] ? 'succeeded' : 'failed';
			expect(rec.status).toBe(want);
			expect(await q(`SELECT status FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [rec.operationKey])).toEqual([{ status: want }]);
		},
	},
	{
		name: 'Dequeue dequeue',
		modes: ['valid', 'invalid', 'down', 'nothing'],
		invalidItem: 0,
		outputs: { 2: ['Unrecorded', 'Result'], 1: ['Result'] },
		goAhead: { 2: [1], 1: [0] },
		seed: async (id) => {
			await enqueue(db.pool, db.schema, [{ queue: id, group: 'normal', payload: { n: 1 } }, { queue: id, group: 'normal', payload: { n: 2 } }]);
		},
		build: (id, mode, s, v) => ({
			nodes: [
				source([{ bad: bad(mode) }, {}]),
				ut(
					'priorityDequeue',
					{ resource: 'task', operation: 'dequeue', queue: mode === 'nothing' ? `${id}-none` : id, batchSize: '={{ $json.bad ? 0 : 10 }}', leaseSeconds: 300, options: {} },
					s,
					v,
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
		outputs: { 2: ['Unrecorded', 'Result'], 1: ['Result'] },
		goAhead: { 2: [1], 1: [] },
		build: (id, mode, s, v) => ({
			nodes: [
				source([{ n: 1 }, { n: 2, bad: bad(mode) }]),
				ut(
					'priorityDequeue',
					{ resource: 'task', operation: 'enqueue', queue: id, priorityGroup: 'normal', payload: "={{ $json.bad ? '{bad' : '{}' }}", dedupeKey: '', options: {} },
					s,
					v,
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
		outputs: { 2: ['Unrecorded', 'Result'], 1: ['Result'] },
		goAhead: { 2: [], 1: [] },
		build: (id, mode, s, v) => ({
			nodes: [
				source([{ q: id }, { q: bad(mode) ? '' : id }]),
				ut('priorityDequeue', { resource: 'queue', operation: 'stats', queue: '={{ $json.q }}', options: {} }, s, v, mode === 'down'),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided() {
			// Not a go-ahead output.
		},
	},
];

/** Operation Ledger Admin version 2: the same outputs for every operation (nodes/OperationLedgerAdmin/outputs.ts). */
const ADMIN_V2 = ['Unrecorded', 'Result', 'Settled', 'Refused'];
/** The Admin node's type version per matrix: version 1 is fail-closed already, version 2 has the fixed outputs. */
const ADMIN_TYPE_VERSIONS = { 2: 1, 3: 2 };

/**
 * An Operation Ledger Admin operation with the outputs [Unrecorded, Result] (version 1; Result is
 * output 1 of version 2's fixed list too): not a go-ahead, but
 * Result must hold only answers of the database. `params(bad)` gives the node's parameters; `items`
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
		outputs: { 2: ['Unrecorded', 'Result'], 1: [], 3: ADMIN_V2 },
		goAhead: { 2: [], 1: [], 3: [] },
		othersOutputs: [2, 3],
		typeVersion: ADMIN_TYPE_VERSIONS,
		seed,
		build: (id, mode, s, v) => ({
			nodes: [source(items(id, mode)), ut('operationLedgerAdmin', { operation: op, ...params(id) }, s, v, mode === 'down')],
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
		outputs: { 2: ['Unrecorded', 'Settled', 'Refused'], 1: [], 3: ADMIN_V2 },
		goAhead: { 2: [1], 1: [], 3: [2] },
		othersOutputs: [1],
		typeVersion: ADMIN_TYPE_VERSIONS,
		seed: seedUnknown,
		build: (id, mode, s, v) => ({
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
					v,
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
async function runCase(sc: Scenario, mode: Mode, s: Settings, version: 1 | 2 | 3): Promise<string[]> {
	const problems: string[] = [];
	const id = `eng${process.pid}c${++caseNo}`;
	if (sc.seed && mode !== 'nothing') await sc.seed(id);
	const typeVersion = version === 1 ? 1 : (sc.typeVersion?.[version] ?? version);
	const { nodes, feeds } = sc.build(id, mode, s, typeVersion);
	const names = [...(sc.outputs[version] ?? [])];
	if (s.onError === 'continueErrorOutput') names.push('Error');
	const sinkNames = names.map((n) => `UT → ${n}`);
	const { run, received } = await engine.run([...nodes, ...sinkNames.map(sink)], connect({ ...feeds, UT: sinkNames.map((n) => [n]) }));
	const got = (i: number): INodeExecutionData[] => (received as Received)[sinkNames[i]] ?? [];
	const goAhead = sc.goAhead[version] ?? [];
	const tag = `${sc.name} v${typeVersion} ${mode} ${label(s)}`;
	const check = (ok: boolean, what: string) => {
		if (!ok) problems.push(`${tag}: ${what} (received ${JSON.stringify(Object.fromEntries(sinkNames.map((n, i) => [n, got(i).map((it) => it.json)])))}; error ${runError(run)})`);
	};

	// The invariant: every item on a go-ahead output was decided by the database in this run.
	for (const o of goAhead) {
		for (const item of got(o)) {
			check(!('error' in item.json), `error item on go-ahead output ${names[o]}`);
			check(Object.keys(item.json).length > 0, `empty item on go-ahead output ${names[o]}`);
			try {
				await sc.decided(item, o, version);
			} catch (e) {
				check(false, `item on ${names[o]} not decided by the database: ${(e as Error).message.split('\n').slice(0, 6).join(' ')}`);
			}
		}
	}
	// No error item on any result output (version 2: anything but Unrecorded and Error).
	const resultOutputs = names.map((_, i) => i).filter((i) => names[i] !== 'Error' && !(version >= 2 && i === 0));
	for (const o of resultOutputs) {
		for (const item of got(o)) {
			if (version === 1 && 'error' in item.json && !goAhead.includes(o)) continue; // v1: error items on a non-go-ahead output
			check(!('error' in item.json), `error item on result output ${names[o]}`);
		}
	}

	// Fixed outputs: another operation's outputs stay empty, whatever happened.
	if (version === 3) for (const o of sc.othersOutputs ?? []) check(got(o).length === 0, `items on ${names[o]}, an output of another operation`);

	// Where failures went.
	const fails = mode === 'down' || (mode === 'invalid' && !(s.executeOnce && sc.invalidItem === 1));
	const errorItems = names.flatMap((_, i) => got(i).filter((it) => 'error' in it.json));
	if (s.onError === 'stopWorkflow') {
		check(fails === (runError(run) !== undefined), `run error expected ${fails}`);
		if (fails) check(names.every((_, i) => got(i).length === 0), 'nothing may leave a node that stopped the workflow');
	} else {
		check(runError(run) === undefined || (version === 1 && s.onError === 'continueRegularOutput' && goAhead.length > 0 && names.length === 1), 'the run should not fail under Continue');
		if (fails) check(errorItems.length > 0 || (version === 1 && names.length === 1 && s.onError === 'continueRegularOutput'), 'error items expected');
		if (s.onError === 'continueErrorOutput') check(errorItems.every((it) => got(names.length - 1).includes(it)), 'error items must be on the Error output');
		else if (version >= 2) check(errorItems.every((it) => got(0).includes(it)), 'error items must be on Unrecorded');
	}
	if (version >= 2 && s.alwaysOutputData && s.onError !== 'stopWorkflow' && mode === 'nothing') {
		check(got(0).length === 1 && Object.keys(got(0)[0].json).length === 0, 'Always Output Data: the empty item goes to Unrecorded');
	}
	if (mode === 'valid') {
		check(runError(run) === undefined, 'a valid run must not fail');
		check(goAhead.length === 0 || goAhead.some((o) => got(o).length > 0), 'valid items reach a go-ahead output');
	}
	return problems;
}

describe('fail-closed outputs in n8n-core WorkflowExecute (node version 2)', () => {
	for (const sc of scenarios) {
		test(`${sc.name}: ${sc.modes.join(', ')} × every On Error × Always Output Data × Retry On Fail × Execute Once`, async () => {
			const problems: string[] = [];
			let cases = 0;
			for (const mode of sc.modes) {
				for (const s of allSettings) {
					problems.push(...(await runCase(sc, mode, s, 2)));
					cases++;
				}
			}
			expect(problems).toEqual([]);
			expect(cases).toBe(sc.modes.length * 24);
		});
	}
});

/**
 * Fixed outputs: Reconcile Unknown version 3 and Operation Ledger Admin version 2 (the defaults)
 * have one output list for every operation. The same matrix as version 2: Claim's items reach only
 * To Check (1), Resolve's only its own outputs (2..6); Admin's look-ups only Result (1), Settle's
 * only Settled (2) and Refused (3); error items only Unrecorded or the Error output.
 */
describe('fail-closed outputs of the fixed-output versions (Reconcile Unknown v3, Operation Ledger Admin v2)', () => {
	for (const sc of scenarios.filter((x) => x.outputs[3])) {
		test(`${sc.name} v${sc.typeVersion?.[3] ?? 3}: ${sc.modes.join(', ')} × every On Error × Always Output Data × Retry On Fail × Execute Once`, async () => {
			const problems: string[] = [];
			for (const mode of sc.modes) for (const s of allSettings) problems.push(...(await runCase(sc, mode, s, 3)));
			expect(problems).toEqual([]);
		});
	}
});

/**
 * Version 1 keeps its outputs. Its error items go to the last output that is not a go-ahead; it
 * cannot keep Always Output Data's empty item off output 0, and Dequeue's Dequeue and Reconcile's
 * Claim (one output, a go-ahead) cannot keep error items off it under Continue (regular output):
 * the README says so and tells users to move to version 2. Those combinations are left out here;
 * the next describe shows the first one.
 */
describe('node version 1 keeps its outputs but puts no error item on a go-ahead output', () => {
	for (const sc of scenarios.filter((x) => x.typeVersion === undefined)) {
		test(`${sc.name} v1`, async () => {
			const problems: string[] = [];
			const singleGoAhead = sc.outputs[1].length === 1 && sc.goAhead[1].length === 1;
			const settings = allSettings.filter((x) => !x.alwaysOutputData && !(singleGoAhead && x.onError === 'continueRegularOutput'));
			for (const mode of sc.modes) for (const s of settings) problems.push(...(await runCase(sc, mode, s, 1)));
			expect(problems).toEqual([]);
		});
	}
});

describe('what version 2 fixes', () => {
	test('Reserve run twice for one key with Always Output Data: v1 sends an empty item down Proceed, v2 down Unrecorded', async () => {
		for (const version of [1, 2] as const) {
			const key = `eng${process.pid}:aod:v${version}`;
			const s: Settings = { onError: 'stopWorkflow', alwaysOutputData: true, retryOnFail: false, executeOnce: false };
			const wfNodes = () => [source([{ k: key }]), ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, version, false)];
			const outs = version === 2 ? ['Unrecorded', 'Proceed', 'Done Before', 'In Progress'] : ['Proceed', 'Done Before', 'In Progress'];
			const conns = connect({ Source: [['UT']], UT: outs.map((o) => [o]) });
			await engine.run([...wfNodes(), ...outs.map(sink)], conns);
			const { received } = await engine.run([...wfNodes(), ...outs.map(sink)], conns);
			expect(received['In Progress']).toHaveLength(1);
			if (version === 1) expect(received['Proceed']).toEqual([expect.objectContaining({ json: {} })]);
			else {
				expect(received['Proceed']).toBeUndefined();
				expect(received['Unrecorded']).toEqual([expect.objectContaining({ json: {} })]);
			}
		}
	});
});

describe('pinned data', () => {
	test('pinned output of Reserve goes to Unrecorded in v2 (n8n replays pins on output 0), to Proceed in v1', async () => {
		const s: Settings = { onError: 'stopWorkflow', alwaysOutputData: false, retryOnFail: false, executeOnce: false };
		for (const version of [1, 2] as const) {
			const outs = version === 2 ? ['Unrecorded', 'Proceed'] : ['Proceed'];
			const { run, received } = await engine.run(
				[source([{ k: 'pinned' }]), ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, version, true), ...outs.map(sink)],
				connect({ Source: [['UT']], UT: outs.map((o) => [o]) }),
				{ mode: 'manual', pinData: { UT: [{ json: { ledger: { outcome: 'proceed', leaseToken: 'pinned' } } }] } },
			);
			expect(runError(run)).toBeUndefined();
			if (version === 2) {
				expect(received['Proceed']).toBeUndefined();
				expect(received['Unrecorded']).toHaveLength(1);
			} else expect(received['Proceed']).toHaveLength(1);
		}
	});
});

describe('pinned data on the Admin node', () => {
	test('pinned output of Settle by Hand goes to Unrecorded (n8n replays pins on output 0), never to Settled, in versions 1 and 2', async () => {
		const s: Settings = { onError: 'stopWorkflow', alwaysOutputData: false, retryOnFail: false, executeOnce: false };
		for (const version of [1, 2] as const) {
			const outs = version === 2 ? ADMIN_V2 : ['Unrecorded', 'Settled', 'Refused'];
			const { run, received } = await engine.run(
				[
					source([{ k: 'pinned:settle' }]),
					ut('operationLedgerAdmin', { operation: 'settle', operationKey: '={{ $json.k }}', decision: 'happened', externalReference: 'r', reason: 'x', decidedBy: 'alice' }, s, version, true),
					...outs.map(sink),
				],
				connect({ Source: [['UT']], UT: outs.map((o) => [o]) }),
				{ mode: 'manual', pinData: { UT: [{ json: { ledger: { result: 'settled', status: 'succeeded' } } }] } },
			);
			expect(runError(run)).toBeUndefined();
			expect(received['Settled']).toBeUndefined();
			expect(received['Unrecorded']).toHaveLength(1);
		}
	});
});

describe('partial runs from the editor', () => {
	const s: Settings = { onError: 'continueRegularOutput', alwaysOutputData: false, retryOnFail: false, executeOnce: false };
	const outs = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress'];
	const build = (key: string, down: boolean) => ({
		nodes: [
			source([{ k: key }]),
			ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, 2, down),
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
				ut('confirmOperation', { outcomeSource: 'explicit', outcome: "={{ $json.bad ? 'bogus' : 'succeeded' }}", externalReference: 'ref', lineage: 'auto', options: {} }, s, 2, false),
				...outs.map(sink),
			],
			connect({ Source: [['Reserve']], Reserve: [[], ['UT']], UT: outs.map((o) => [o]) }),
		);
		expect(received['Succeeded']?.map((it) => (it.json.ledger as { result: string }).result)).toEqual(['repeated']);
		expect(received['Unrecorded']).toHaveLength(1);
	});

	// n8n retries a node whose output 0 starts with an error item (and one that throws). Version 2
	// puts error items on output 0, so a batch with one bad item is retried after the database has
	// decided the good ones.
	test('Reserve [good, bad] under Continue + Retry On Fail: the good key answers In Progress on the retry, nothing reaches Proceed', async () => {
		const id = `eng${process.pid}:retry`;
		const s: Settings = { onError: 'continueRegularOutput', alwaysOutputData: false, retryOnFail: true, executeOnce: false };
		const outs = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress'];
		const { run, received } = await engine.run(
			[
				source([{ k: `${id}:a` }, { k: '' }]),
				ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, 2, false),
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
					2,
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
				[source([{ k: `eng${process.pid}:hint:${mode}` }]), ut('reserveOperation', { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 }, s, 2, false)],
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

