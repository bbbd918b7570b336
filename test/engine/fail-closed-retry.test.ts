/**
 * Retry On Fail in n8n's engine never gives an item the database decided on the first try a second
 * go-ahead: the retry's answers come from what the first try recorded.
 */
import { connect, runError, sink, source } from './harness';
import { db, engine, pre, q, setUpFailClosedEngine, ut, type Settings } from './fail-closed-setup';

setUpFailClosedEngine();

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
