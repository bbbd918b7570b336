/**
 * Issue 23: text that Postgres could not store (NUL, lone UTF-16 surrogates) never fails a ledger
 * batch: a Confirm's reason and the event context (a node name) are made storable (U+FFFD) at the
 * core boundary (src/text.ts storableText), so the outcomes beside them are recorded. Before, each
 * failed the whole statement (jsonb: 22P02 / 22P05) and nothing of the batch was recorded. Real
 * Postgres; the queue's sites (Fail, Enqueue's Not Before, task ids) run in test/engine/bad-values.test.ts.
 */
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { testDatabase } from '../../helpers/db';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_badval' });
});
afterAll(async () => {
	await db.drop();
});

it('Reserve and Confirm with a node name and a reason holding NUL and lone surrogates: every item recorded', async () => {
	const ctx = { nodeName: 'Reserve \uD800 \u0000', executionId: 'e\uDC00', workflowId: 'w' };
	const reserved = await reserveOperations(
		db.pool,
		db.ledgerSchema,
		['a', 'b'].map((k, i) => prepareReserveItem(i, { operationKey: `badval:pay:${k}:v1`, request: { k }, leaseSeconds: 60 })),
		ctx,
	);
	expect(reserved.map((r) => r.outcome)).toEqual(['proceed', 'proceed']);
	const confirmed = await confirmOperations(
		db.pool,
		db.ledgerSchema,
		[
			prepareConfirmItem(0, { operationKey: 'badval:pay:a:v1', leaseToken: reserved[0].leaseToken, outcome: 'unknown', reason: 'HTTP 504 \u0000 from \uD83D' }),
			prepareConfirmItem(1, { operationKey: 'badval:pay:b:v1', leaseToken: reserved[1].leaseToken, outcome: 'succeeded', externalRef: 'pay_1' }),
		],
		ctx,
	);
	expect(confirmed.map((r) => r.result)).toEqual(['recorded', 'recorded']);
	const ops = await db.pool.query(`SELECT operation_key AS k, status, reason FROM ${db.schemaSql}.operations WHERE operation_key LIKE 'badval:%' ORDER BY 1`);
	expect(ops.rows).toEqual([
		{ k: 'badval:pay:a:v1', status: 'unknown', reason: 'HTTP 504 \uFFFD from \uFFFD' },
		{ k: 'badval:pay:b:v1', status: 'succeeded', reason: null },
	]);
	const events = await db.pool.query(`SELECT DISTINCT node_name AS n, execution_id AS e FROM ${db.schemaSql}.operation_events WHERE operation_key LIKE 'badval:%'`);
	expect(events.rows).toEqual([{ n: 'Reserve \uFFFD \uFFFD', e: 'e\uFFFD' }]);
});
