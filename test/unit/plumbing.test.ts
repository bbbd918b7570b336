/** One plumbing for ledger and queue: one input error, one schema convention, shared checks. */
import { InputError } from '../../src/errors';
import { checkOperationKey } from '../../src/ledger/validate';
import { checkLeaseToken, checkQueueName, fn } from '../../src/queue/types';
import { InvalidSchemaNameError, schemaSql, sqlFunction } from '../../src/db/identifiers';
import { checkInt, isUuid } from '../../src/check';
import { iso } from '../../src/db/values';
import { iso as ledgerIso } from '../../src/ledger/states';

describe('one plumbing', () => {
	it('ledger and queue input errors are one class, recognised with instanceof', () => {
		const caught: unknown[] = [];
		for (const f of [() => checkOperationKey(''), () => checkQueueName(''), () => checkLeaseToken('x'), () => checkInt(0.5, 'N', { min: 1, max: 2 })]) {
			try {
				f();
			} catch (e) {
				caught.push(e);
			}
		}
		expect(caught).toHaveLength(4);
		for (const e of caught) expect(e).toBeInstanceOf(InputError);
	});

	it('one schema convention: the name as configured or its quoted form, validated before SQL', () => {
		expect(schemaSql('operation_ledger')).toBe('"operation_ledger"');
		expect(schemaSql('"operation_ledger"')).toBe('"operation_ledger"');
		expect(sqlFunction('ol', 'queue_claim')).toBe('"ol".queue_claim');
		expect(fn).toBe(sqlFunction);
		for (const bad of ['"a"; DROP TABLE x; --"', 'Upper', '', '""', '"a"b"', 'a b'])
			expect(() => schemaSql(bad)).toThrow(InvalidSchemaNameError);
	});

	it('one UUID check and one iso conversion', () => {
		expect(isUuid('0190c2a4-7b1e-7cc0-8000-000000000001')).toBe(true);
		expect(isUuid(' 0190c2a4-7b1e-7cc0-8000-000000000001')).toBe(false);
		expect(isUuid(42)).toBe(false);
		expect(ledgerIso).toBe(iso);
		expect(iso(new Date(0))).toBe('1970-01-01T00:00:00.000Z');
		expect(iso(null)).toBeNull();
	});
});
