/**
 * The core's one error model (src/errors.ts): every error the core raises is a CoreError whose
 * `retryable` is decided where it is raised; errors of the driver are mapped by toCoreError
 * (src/db/driverError.ts), the one place that reads SQLSTATEs and driver messages.
 */
import { CoreError, InputError, everyItemSafe } from '../../src/errors';
import { DriverError, toCoreError, WrappingError } from '../../src/db/driverError';
import { DeadlineError, LedgerBusyError, OutcomeUnknownError, ReplicationUnconfirmedError } from '../../src/db/bounds';
import { BatchTooLargeError } from '../../src/db/batch';
import { EndpointError } from '../../src/db/endpoint';
import { InvalidSchemaNameError } from '../../src/db/identifiers';
import { MigrationLockTimeoutError, PackageFileMissingError, SchemaNotReadyError } from '../../src/db/migrate';
import { NotJsonError } from '../../src/json/canonical';
import { RetentionError, type RetentionReport } from '../../src/ledger/admin/retention';

const report: RetentionReport = { mode: 'compact', batches: 0, operations: 0, eventsDeleted: 0, stoppedBecause: 'done', durationMs: 0 };
const pgError = (code: string, message = 'x', severity = 'ERROR') => Object.assign(new Error(message), { code, severity });

describe('one error root carrying retryable', () => {
	it.each([
		['InputError', new InputError('bad'), false],
		['NotJsonError', new NotJsonError('$', 'a BigInt'), false],
		['EndpointError', new EndpointError('No host'), false],
		['BatchTooLargeError', new BatchTooLargeError('too large'), false],
		['InvalidSchemaNameError', new InvalidSchemaNameError('Bad'), false],
		['SchemaNotReadyError', new SchemaNotReadyError('ol', 0, 12), false],
		['PackageFileMissingError', new PackageFileMissingError('/n/schema/migrations'), false],
		['MigrationLockTimeoutError', new MigrationLockTimeoutError('ol', 100, 'advisory lock'), true],
		['LedgerBusyError', new LedgerBusyError('busy', '55P03'), true],
		['DeadlineError', new DeadlineError(32000), true],
		['OutcomeUnknownError (not safe)', new OutcomeUnknownError(new Error('Connection terminated')), false],
		['OutcomeUnknownError (safe)', new OutcomeUnknownError(new Error('Connection terminated'), true), true],
		['ReplicationUnconfirmedError (not safe)', new ReplicationUnconfirmedError(31000), false],
		['ReplicationUnconfirmedError (safe)', new ReplicationUnconfirmedError(31000, false, [true, true]), true],
		['RetentionError (lock timeout)', new RetentionError('m', report, pgError('55P03')), true],
		['RetentionError (permission)', new RetentionError('m', report, pgError('42501')), false],
		['RetentionError (lost connection)', new RetentionError('m', report, new Error('Connection terminated unexpectedly'), true), true],
	])('%s is a CoreError, retryable %s', (_name, err, retryable) => {
		expect(err).toBeInstanceOf(CoreError);
		expect(err).toBeInstanceOf(Error);
		expect(err.retryable).toBe(retryable);
		expect(toCoreError(err)).toBe(err);
	});

	it('retryableItem: per item for a batch whose items differ, else the error’s retryable', () => {
		const mixed = new OutcomeUnknownError(new Error('Connection terminated'), [true, false, true]);
		expect([0, 1, 2, 3].map((k) => mixed.retryableItem(k))).toEqual([true, false, true, false]);
		expect(mixed.retryable).toBe(false);
		const rep = new ReplicationUnconfirmedError(null, true, [false, true]);
		expect([rep.retryableItem(0), rep.retryableItem(1), rep.retryable]).toEqual([false, true, false]);
		expect(new LedgerBusyError('busy', '57014').retryableItem(7)).toBe(true);
		expect(new InputError('bad').retryableItem(0)).toBe(false);
		expect([everyItemSafe(true), everyItemSafe(false), everyItemSafe([]), everyItemSafe([true]), everyItemSafe([true, false])]).toEqual([true, false, false, true, false]);
	});

	it('RetentionError is retryable exactly when its cause is (WrappingError)', () => {
		expect(new RetentionError('m', report, new DeadlineError(1000))).toBeInstanceOf(WrappingError);
		expect(new RetentionError('m', report, new DeadlineError(1000)).retryable).toBe(true);
		expect(new RetentionError('m', report, new InputError('bad')).retryable).toBe(false);
		expect(new RetentionError('m', report).retryable).toBe(false);
	});
});

describe('toCoreError: the one mapping of driver errors', () => {
	it.each([
		// A bound fired, a rollback that outlived the retries, resources, shutdown, read-only: passes by itself.
		['57014', true, false],
		['55P03', true, false],
		['40001', true, false],
		['40P01', true, false],
		['53300', true, false],
		['53200', true, false],
		['25006', true, false],
		// The connection failed or ended (class 08, 57P0x, authentication, database missing).
		['08006', true, true],
		['57P01', true, true],
		['57P03', true, true],
		['28P01', true, true],
		['3D000', true, true],
		['ECONNREFUSED', true, true],
		['ETIMEDOUT', true, true],
		['ENOTFOUND', true, true],
		['SELF_SIGNED_CERT_IN_CHAIN', true, true],
		['ERR_TLS_CERT_ALTNAME_INVALID', true, true],
		// Needs a change first: permission, syntax, constraint, invalid argument, undefined function.
		['42501', false, false],
		['42601', false, false],
		['23505', false, false],
		['22023', false, false],
		['42883', false, false],
	])('SQLSTATE / code %s: retryable %s, connection failed %s', (code, retryable, connectionFailed) => {
		const raw = pgError(code, 'the server said no');
		const err = toCoreError(raw);
		expect(err).toBeInstanceOf(DriverError);
		expect(err.retryable).toBe(retryable);
		expect((err as DriverError).connectionFailed).toBe(connectionFailed);
		expect((err as DriverError).code).toBe(code);
		expect((err as DriverError).cause).toBe(raw);
		expect(err.message).toBe('the server said no');
	});

	it.each([
		['Connection terminated unexpectedly', true],
		['timeout exceeded when trying to connect', true],
		['The server does not support SSL connections', true],
		['self-signed certificate in certificate chain', true],
		['the database system is starting up', true],
		['terminating connection due to administrator command', true],
		['socket hang up', true],
		['relation "x" does not exist', false],
		['something else', false],
	])('driver message %j (no code): retryable %s', (message, retryable) => {
		const err = toCoreError(new Error(message)) as DriverError;
		expect(err.retryable).toBe(retryable);
		expect(err.connectionFailed).toBe(retryable);
		expect(err.code).toBeUndefined();
	});

	it('a value that is not an Error keeps its text', () => {
		expect(toCoreError('boom').message).toBe('boom');
		expect(toCoreError(undefined).retryable).toBe(false);
		expect(toCoreError(undefined).message).toBe('undefined');
	});

	it('the model decides, not a name: an error merely named LedgerBusyError is not retryable', () => {
		const impostor = Object.assign(new Error('busy'), { name: 'LedgerBusyError' });
		expect(toCoreError(impostor).retryable).toBe(false);
	});
});
