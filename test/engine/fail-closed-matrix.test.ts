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
 * The other fail-closed cases: fail-closed-pre-release.test.ts (what failed on the node versions
 * before the first release), fail-closed-retry.test.ts (Retry On Fail after a partly decided
 * batch), fail-closed-editor.test.ts (pinned data, partial runs, manual runs, AI tools).
 */
import type { INode, INodeExecutionData } from 'n8n-workflow';
import { enqueue } from '../../src/queue';
import { connect, runError, sink, source, type Received } from './harness';
import {
	ADMIN_OUTPUTS,
	db,
	engine,
	ON_ERROR,
	pre,
	q,
	RECONCILE_OUTPUTS,
	RESERVE_OUTPUTS,
	reserveDecided,
	seedUnknown,
	setUpFailClosedEngine,
	ut,
	type Mode,
	type Settings,
} from './fail-closed-setup';

setUpFailClosedEngine();

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
/** Task ids a scenario's seed enqueued, by run id (read by its build). */
const seededIds = new Map<string, string[]>();

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
			await enqueue(db.pool, db.ledgerSchema, [{ queue: id, group: 'normal', payload: { n: 1 } }, { queue: id, group: 'normal', payload: { n: 2 } }]);
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
		decided: reserveDecided,
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
			await enqueue(db.pool, db.ledgerSchema, [{ queue: id, group: 'normal', payload: { n: 1 } }, { queue: id, group: 'normal', payload: { n: 2 } }]);
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
		// Cancel by dedupe key (the key is known before the run; an empty key is the invalid item).
		// A retry of the run finds the key free again: not_found.
		name: 'Dequeue cancel',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ['Unrecorded', 'Result'],
		goAhead: [1],
		seed: async (id) => {
			await enqueue(db.pool, db.ledgerSchema, [
				{ queue: id, group: 'normal', dedupeKey: `${id}-1` },
				{ queue: id, group: 'normal', dedupeKey: `${id}-2` },
			]);
		},
		build: (id, mode, s) => ({
			nodes: [
				source([{ k: `${id}-1` }, { k: bad(mode) ? '' : `${id}-2` }]),
				ut('priorityDequeue', { resource: 'task', operation: 'cancel', cancelBy: 'dedupeKey', queue: id, dedupeKey: '={{ $json.k }}', reason: 'engine test', cancelledBy: 'matrix' }, s, mode === 'down'),
			],
			feeds: { Source: [['UT']] },
		}),
		async decided(item) {
			expect(['cancelled', 'not_found']).toContain(item.json.outcome);
			if (item.json.outcome === 'cancelled')
				expect(await q(`SELECT status, cancel_reason FROM ${db.schemaSql}.queue_tasks_archive WHERE id = $1`, [item.json.taskId])).toEqual([{ status: 'cancelled', cancel_reason: 'engine test' }]);
		},
	},
	{
		// Settle by ID, complete: the two tasks seeded for this run (their ids read by the build); an
		// empty task ID is the invalid item. A retry of the run finds them completed: finished.
		name: 'Dequeue settleById',
		modes: ['valid', 'invalid', 'down'],
		invalidItem: 1,
		outputs: ['Unrecorded', 'Result'],
		goAhead: [1],
		seed: async (id) => {
			const got = await enqueue(db.pool, db.ledgerSchema, [
				{ queue: id, group: 'normal' },
				{ queue: id, group: 'normal' },
			]);
			seededIds.set(id, got.map((t) => t.taskId));
		},
		build: (id, mode, s) => {
			const [a, b] = seededIds.get(id) ?? ['1', '2'];
			return {
				nodes: [
					source([{ t: a }, { t: bad(mode) ? '' : b }]),
					ut('priorityDequeue', { resource: 'task', operation: 'settleById', queue: id, taskId: '={{ $json.t }}', settleAction: 'complete', result: '{"by":"matrix"}', reason: 'engine test', settledBy: 'matrix' }, s, mode === 'down'),
				],
				feeds: { Source: [['UT']] },
			};
		},
		async decided(item) {
			expect(['completed', 'finished', 'not_found']).toContain(item.json.outcome);
			if (item.json.outcome === 'completed')
				expect(await q(`SELECT status, operator_reason FROM ${db.schemaSql}.queue_tasks_archive WHERE id = $1`, [item.json.taskId])).toEqual([{ status: 'succeeded', operator_reason: 'engine test' }]);
		},
	},
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
