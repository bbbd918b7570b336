/** One plumbing for ledger and queue: one input error, one schema convention, shared checks. */
import { InputError } from '../../src/errors';
import { checkOperationKey } from '../../src/ledger/validate';
import { checkLeaseToken, checkQueueName, fn } from '../../src/queue/types';
import { InvalidSchemaNameError, ledgerSchema, schemaSql, sqlFunction, type LedgerSchema } from '../../src/db/identifiers';
import { ledgerSchema as queueLedgerSchema } from '../../src/queue';
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

	it('one schema convention: validated and quoted once by ledgerSchema(), read without validating again', () => {
		const s = ledgerSchema('operation_ledger');
		expect(s).toEqual({ name: 'operation_ledger', sql: '"operation_ledger"' });
		expect(Object.isFrozen(s)).toBe(true);
		expect(schemaSql(s)).toBe('"operation_ledger"');
		expect(sqlFunction(ledgerSchema('ol'), 'queue_claim')).toBe('"ol".queue_claim');
		expect(fn).toBe(sqlFunction);
		expect(queueLedgerSchema).toBe(ledgerSchema);
		// One form only: the quoted form is not a name.
		for (const bad of ['"operation_ledger"', '"a"; DROP TABLE x; --"', 'Upper', '', '""', '"a"b"', 'a b', '1abc', 'a'.repeat(64)]) {
			expect(() => ledgerSchema(bad)).toThrow(InvalidSchemaNameError);
		}
		expect(() => ledgerSchema(7 as unknown as string)).toThrow(InvalidSchemaNameError);
	});

	it('a raw string, or a copy of a LedgerSchema, never reaches SQL text', () => {
		// The type system refuses them at the core boundary ...
		// @ts-expect-error a raw string is not a LedgerSchema
		const raw: LedgerSchema = 'operation_ledger';
		// @ts-expect-error an object literal lacks the brand only ledgerSchema() gives
		const copy: LedgerSchema = { name: 'operation_ledger', sql: '"operation_ledger"' };
		// ... and at run time (plain JavaScript callers, casts) they are refused before any SQL.
		for (const forged of [raw, copy, { ...ledgerSchema('operation_ledger') }, '"operation_ledger"' as unknown as LedgerSchema, undefined as unknown as LedgerSchema]) {
			expect(() => schemaSql(forged)).toThrow(InvalidSchemaNameError);
			expect(() => sqlFunction(forged, 'queue_claim')).toThrow(/not a string/);
		}
	});

	it('one UUID check and one iso conversion', () => {
		expect(isUuid('0190c2a4-7b1e-7cc0-8000-000000000001')).toBe(true);
		expect(isUuid(' 0190c2a4-7b1e-7cc0-8000-000000000001')).toBe(false);
		expect(isUuid(42)).toBe(false);
		expect(ledgerIso).toBe(iso);
		expect(iso(new Date(0))).toBe('1970-01-01T00:00:00.000Z');
		expect(iso(null)).toBeNull();
		// A remembered instant's text is reused only for the same instant.
		const a = new Date('2026-12-03T06:00:00.123Z');
		const b = new Date('2026-12-03T06:05:00.001Z');
		expect([iso(a), iso(new Date(a.getTime())), iso(b), iso(a), iso('2026-12-03 06:05:00.001+00'), iso(b)]).toEqual([
			'2026-12-03T06:00:00.123Z',
			'2026-12-03T06:00:00.123Z',
			'2026-12-03T06:05:00.001Z',
			'2026-12-03T06:00:00.123Z',
			'2026-12-03T06:05:00.001Z',
			'2026-12-03T06:05:00.001Z',
		]);
		// More instants than it remembers, in turn: each still gets its own text.
		const many = Array.from({ length: 9 }, (_, k) => new Date(Date.UTC(2026, 11, 3, 6, k)));
		for (let round = 0; round < 3; round++) expect(many.map((d) => iso(d))).toEqual(many.map((d) => d.toISOString()));
		expect(() => iso('not a time')).toThrow(RangeError);
		expect(() => iso(new Date(Number.NaN))).toThrow(RangeError);
	});
});
