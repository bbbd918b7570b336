/**
 * When n8n cannot load the node's credential, no database was involved: every node says so (and
 * where to fix it) instead of "the database refused the statement", writes nothing, and under
 * Continue puts the items on Unrecorded (output 0). No database in these tests.
 */
import type { ITriggerFunctions } from 'n8n-workflow';
import { ReserveOperation } from '../../../nodes/ReserveOperation/ReserveOperation.node';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { PriorityDequeueTrigger } from '../../../nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node';
import { fakeExecute, type FakeOptions } from '../../helpers/fakeExecute';

const N8N_MESSAGE = 'Credential with ID "ledger-operator-pg" does not exist for type "operationLedgerPostgresApi".';
const missing = async () => {
	throw new Error(N8N_MESSAGE);
};
function withoutCredential(o: FakeOptions) {
	const fns = fakeExecute(o) as unknown as Record<string, unknown>;
	fns.getCredentials = missing;
	return fns as unknown as ReturnType<typeof fakeExecute>;
}
const reserveParams = {
	keyMode: 'custom',
	operationKey: (i: number) => `k-${i}`,
	request: { a: 1 },
	target: 't',
	leaseSeconds: 60,
};
const EXPECTED =
	/^Reserve Operation failed and nothing of this batch was recorded \(2 item\(s\)\): Could not load the credential \(operationLedgerPostgresApi\): Credential with ID "ledger-operator-pg" does not exist for type "operationLedgerPostgresApi"\. Open the node and select an Operation Ledger Postgres credential\.$/;

describe('a credential n8n cannot load', () => {
	it('Reserve under Continue: every item on Unrecorded with the credential message, not a database one', async () => {
		const fns = withoutCredential({ items: [{ json: {} }, { json: {} }], params: reserveParams, continueOnFail: true, nodeName: 'Reserve Operation' });
		const out = await new ReserveOperation().execute.call(fns);
		expect(out[0].map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		for (const item of out[0]) {
			expect(item.json.error).toMatch(EXPECTED);
			expect(item.json.error).not.toMatch(/database refused|transaction/);
		}
		expect(out.slice(1).every((o) => o.length === 0)).toBe(true);
	});

	it('Reserve without Continue: throws the credential message with a description that names no database fault', async () => {
		const fns = withoutCredential({ items: [{ json: {} }, { json: {} }], params: reserveParams, nodeName: 'Reserve Operation' });
		const err = await new ReserveOperation().execute.call(fns).then(
			() => undefined,
			(e: unknown) => e as Error & { description?: string },
		);
		expect(err?.message).toMatch(EXPECTED);
		expect(err?.description).toMatch(/Nothing was sent to the database/);
	});

	it('Priority Dequeue (Stats) says the same', async () => {
		const fns = withoutCredential({ items: [{ json: {} }], params: { operation: 'stats', queue: 'q' }, continueOnFail: true, nodeName: 'Priority Dequeue' });
		const out = await new PriorityDequeue().execute.call(fns);
		const errors = out.flat().map((i) => i.json.error);
		expect(errors).toHaveLength(1);
		expect(errors[0]).toMatch(/^Stats failed and nothing of this batch was recorded \(1 item\(s\)\): Could not load the credential \(operationLedgerPostgresApi\): Credential with ID/);
	});

	it('the trigger does not activate and says which credential to select', async () => {
		const fns = { getCredentials: missing, getNode: () => ({ id: 't', name: 'Priority Dequeue Trigger', type: 'x', typeVersion: 1, position: [0, 0], parameters: {} }) };
		await expect(new PriorityDequeueTrigger().trigger.call(fns as unknown as ITriggerFunctions)).rejects.toThrow(
			/^Could not load the credential \(operationLedgerPostgresApi\): Credential with ID "ledger-operator-pg" does not exist for type "operationLedgerPostgresApi"\. Open the node and select an Operation Ledger Postgres credential\.$/,
		);
	});
});
