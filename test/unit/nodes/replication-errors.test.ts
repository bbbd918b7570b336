/**
 * What an item says after a failover-related failure (nodes/shared/items.ts batchFailure): a
 * read-only server (SQLSTATE 25006: a standby, a demoted primary) and a batch recorded on the server
 * whose synchronous standby did not confirm it (ReplicationUnconfirmedError, src/db/syncRep.ts).
 * The real servers are in test/integration/hardening/replication-check.test.ts.
 */
import { NodeOperationError } from 'n8n-workflow';
import { batchFailure } from '../../../nodes/shared/items';
import { ReplicationUnconfirmedError } from '../../../src/db/syncRep';

const fns = (continueOnFail: boolean) => ({ continueOnFail: () => continueOnFail, getNode: () => ({ name: 'n' }) }) as never;

describe('batchFailure after a failover', () => {
	it('SQLSTATE 25006 says the server is read-only and the credential must lead to the primary; retryable', () => {
		const e = Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' });
		const [item] = batchFailure(fns(true), e, 'Reserve Operation', [0]);
		expect(item.json.error).toMatch(/nothing of this batch was recorded .*the database is read-only here \(SQLSTATE 25006: a standby, or a primary a failover demoted\); the credential must lead to the current primary/);
		expect(item.json.retryable).toBe(true);
	});

	it('ReplicationUnconfirmedError: "may have been recorded", names the cause, per-item repeat safety', () => {
		const e = new ReplicationUnconfirmedError(31_004, false, [true, false]);
		const items = batchFailure(fns(true), e, 'Enqueue', [3, 7]);
		expect(items.map((i) => i.pairedItem)).toEqual([{ item: 3 }, { item: 7 }]);
		for (const i of items) {
			expect(i.json.error).toMatch(/^Enqueue may have been recorded \(2 item\(s\)\): the batch was recorded on the database server, but waiting for synchronous replication was cancelled by the node after 31004 ms/);
			expect(i.json.error).not.toMatch(/nothing of this batch was recorded/);
		}
		expect(items[0].json).toMatchObject({ retryable: true });
		expect(items[0].json.error).toMatch(/Sending this item again is safe/);
		expect(items[1].json).toMatchObject({ retryable: false });
		expect(items[1].json.error).toMatch(/would record it a second time/);
	});

	it('without continueOnFail the node fails with the same head and says whether running it again is safe', () => {
		const safe = (() => {
			try {
				batchFailure(fns(false), new ReplicationUnconfirmedError(null, false, true), 'Confirm Operation', [0]);
			} catch (e) {
				return e as NodeOperationError;
			}
			throw new Error('did not throw');
		})();
		expect(safe).toBeInstanceOf(NodeOperationError);
		expect(safe.message).toMatch(/^Confirm Operation may have been recorded \(1 item\(s\)\): .*cancelled by the server/);
		expect(safe.description).toMatch(/^Running the execution again is safe/);
		let unsafe: NodeOperationError | undefined;
		try {
			batchFailure(fns(false), new ReplicationUnconfirmedError(2000, false, [false]), 'Enqueue', [0]);
		} catch (e) {
			unsafe = e as NodeOperationError;
		}
		expect(unsafe?.description).toMatch(/^Do not simply run it again/);
	});
});
