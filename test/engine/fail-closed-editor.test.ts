/**
 * The editor's ways of running a node, in n8n's engine: pinned data (replayed on output 0,
 * Unrecorded, never on a go-ahead output), partial runs ("Execute step"), the hint of a manual run,
 * and that no node is usable as an AI tool (n8n hands an agent only output 0).
 */
import { connect, PKG, runError, runPartial, sink, source } from './harness';
import { ADMIN_OUTPUTS, engine, plain, reserveParams, setUpFailClosedEngine, ut, type Settings } from './fail-closed-setup';

setUpFailClosedEngine();

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
	// idempotency key. Nothing in a node can prevent that; docs/recovery.md says so, and it is why the
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
