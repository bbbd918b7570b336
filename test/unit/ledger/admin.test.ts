import { checkListOptions } from '../../../src/ledger/admin/list';
import { checkRetentionOptions } from '../../../src/ledger/admin/retention';
import { prepareSettleItem, refusalMessage } from '../../../src/ledger/admin/settle';

describe('Operation Ledger Admin input checks (nothing is written for bad input)', () => {
	it('list options: kind, bounds, and only cursors this node issued', () => {
		expect(checkListOptions({ kind: 'review' })).toEqual({ kind: 'review', minAgeSeconds: 0, target: null, limit: 50, cursor: null });
		expect(() => checkListOptions({ kind: 'succeeded' })).toThrow(/unknown, review, expired_lease, failed/);
		expect(() => checkListOptions({ kind: 'unknown', limit: 0 })).toThrow(/page size/);
		expect(() => checkListOptions({ kind: 'unknown', limit: 1001 })).toThrow(/page size/);
		expect(() => checkListOptions({ kind: 'unknown', minAgeSeconds: -1 })).toThrow(/minimum age/);
		const cursor = Buffer.from(JSON.stringify(['2026-12-01T04:00:00.123456+00:00', 'k'])).toString('base64url');
		expect(checkListOptions({ kind: 'unknown', cursor }).cursor).toBe(cursor);
		expect(() => checkListOptions({ kind: 'unknown', cursor: Buffer.from('["x","k"]').toString('base64url') })).toThrow(/cursor/);
		expect(() => checkListOptions({ kind: 'unknown', cursor: '%%%' })).toThrow(/cursor/);
	});

	it('settle: a person, a reason, a decision, and evidence for happened', () => {
		const ok = prepareSettleItem(3, { operationKey: 'k:1', decision: 'not_happened', externalRef: 'ignored', reason: ' none at the bank ', decidedBy: ' ann ' });
		expect(ok).toEqual({ index: 3, operationKey: 'k:1', decision: 'not_happened', externalRef: null, reason: 'none at the bank', decidedBy: 'ann', beforeSettleWindowEnd: false });
		expect(() => prepareSettleItem(0, { operationKey: 'k', decision: 'happened', reason: 'r', decidedBy: 'a' })).toThrow(/reference/);
		expect(() => prepareSettleItem(0, { operationKey: 'k', decision: 'happened', externalRef: 'x', reason: 'r', decidedBy: 'a'.repeat(201) })).toThrow(/at most 200/);
		expect(() => prepareSettleItem(0, { operationKey: 'k', decision: 'happened', externalRef: 'x', reason: 'r', decidedBy: 42 })).not.toThrow();
		expect(() => prepareSettleItem(0, { operationKey: 'k', decision: 'happened', externalRef: 'x', reason: {}, decidedBy: 'a' })).toThrow(/string/);
	});

	it('retention: hard delete only with the acknowledgement; bounds on every limit', () => {
		expect(checkRetentionOptions({ mode: 'compact', olderThanDays: 90 })).toEqual({
			mode: 'compact',
			olderThanDays: 90,
			batchSize: 1000,
			maxBatches: 100,
			maxDurationMs: 60000,
			statementTimeoutMs: 30000,
		});
		expect(() => checkRetentionOptions({ mode: 'compact', olderThanDays: 0 })).toThrow(/Older than/);
		expect(() => checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 90, acknowledge: 'yes' })).toThrow(/acknowledgement/);
		expect(checkRetentionOptions({ mode: 'hard_delete', olderThanDays: 90, acknowledge: true }).mode).toBe('hard_delete');
		expect(() => checkRetentionOptions({ mode: 'truncate', olderThanDays: 90 })).toThrow(/compact or hard_delete/);
		expect(() => checkRetentionOptions({ mode: 'compact', olderThanDays: 90, statementTimeoutMs: 10 })).toThrow(/statement timeout/);
	});

	it('a refusal names who decided', () => {
		expect(
			refusalMessage({ index: 0, result: 'refused', status: 'succeeded', attempt: 1, externalRef: 'p', retryable: null, decidedBy: 'ann', decidedAt: '2026-12-01T00:00:00.000Z', decision: 'happened', settleUntil: null }),
		).toBe('Already settled as succeeded (happened) by ann at 2026-12-01T00:00:00.000Z; only unknown or review operations can be settled by hand');
		expect(refusalMessage({ index: 0, result: 'refused', status: 'reserved', attempt: 2, externalRef: null, retryable: null, decidedBy: null, decidedAt: null, decision: null, settleUntil: null })).toMatch(
			/is reserved, not unknown or review/,
		);
	});
});
