/**
 * The fail-closed cases that failed only on the older node versions the package carried before its
 * first release, run at version 1, the only version: Retry On Fail with an input field `error`, a
 * NOTIFY forged by a role without privileges, Always Output Data. The invariant and the matrix:
 * fail-closed-matrix.test.ts.
 */
import { Client } from 'pg';
import type { INode } from 'n8n-workflow';
import { prepareReserveItem, reserveOperations } from '../../src/ledger/reserve';
import { enqueue, queueChannel } from '../../src/queue';
import { DATABASE_URL, sleep } from '../helpers/db';
import { waitFor } from '../helpers/wait';
import { Engine, PKG, connect, node, runError, sink, source } from './harness';
import { db, declaredOutputs, engine, OK, ON_ERROR, plain, pre, reserveDecided, reserveParams, seedUnknown, setUpFailClosedEngine, ut, withError, type Settings } from './fail-closed-setup';

setUpFailClosedEngine();

let caseNo = 0;

/**
 * The cases that failed only on the older node versions the package carried before its first
 * release, run at version 1, the only version now. Each was seen to fail with the old
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
			for (const item of proceed) await reserveDecided(item);
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
			const channels = Object.values(queues).map((q) => queueChannel(db.ledgerSchema, q));
			// Both triggers listen before the forging starts.
			await waitFor(
				async () => (await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = ANY($1)`, [channels.map((c) => `LISTEN ${c}`)])).rows[0].n === 2,
				{ what: 'both triggers listening', timeoutMs: 5000, intervalMs: 50 },
			);

			let sent = 0;
			const until = Date.now() + 10_000;
			while (Date.now() < until) {
				for (const q of Object.values(queues)) {
					// The payload a real enqueue sends (the queue name: ready work), and the empty one.
					await forger.query(`SELECT pg_notify($1, $2)`, [queueChannel(db.ledgerSchema, q), sent % 2 === 0 ? q : '']);
					sent++;
				}
				await sleep(20); // fixed on purpose: the forger's rate (about 100 notifications a second per queue for 10 s) is the attack under test
			}
			expect(sent).toBeGreaterThan(200);

			// The barrier, and the positive control: real work, enqueued after the forging, starts an
			// execution through the same LISTEN connections. A connection delivers its notifications in
			// order, so once each trigger ran for its real task it had handled every forged one first;
			// none of them may have started an execution (no emit before the real work, the claim
			// trigger's first execution carries the real task).
			const realAt = Date.now();
			await enqueue(db.pool, db.ledgerSchema, [{ queue: queues.wakeUp, group: 'high', payload: { real: 1 } }]);
			await enqueue(db.pool, db.ledgerSchema, [{ queue: queues.claim, group: 'high', payload: { real: 2 } }]);
			await waitFor(() => active.every((a) => a.runs.length > 0), { what: 'an execution of each trigger for its real task', timeoutMs: 5000, intervalMs: 50 });
			expect(active.map((a) => ({ emitsBeforeRealWork: a.emits.filter((e) => e.at < realAt).length, errors: a.errors }))).toEqual([
				{ emitsBeforeRealWork: 0, errors: [] },
				{ emitsBeforeRealWork: 0, errors: [] },
			]);
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
					await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: id, request: { k: id }, leaseSeconds: 300, target: 't' })]);
					return { nodes: [source([{ k: id }]), ut('reserveOperation', reserveParams, s, false)], feeds: { Source: [['UT']] } };
				},
			},
			{
				name: 'Confirm with a lost lease (Stale)',
				type: 'confirmOperation',
				goAhead: ['Succeeded'],
				build: async (id, s) => {
					await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: id, request: { k: id }, leaseSeconds: 300, target: 't' })]);
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
