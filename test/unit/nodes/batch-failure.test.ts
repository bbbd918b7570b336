/**
 * The error item of a failed batch (nodes/shared/items.ts batchFailure) reads `retryable` and the
 * kind of failure from the core's error model (src/errors.ts, src/db/driverError.ts): messages and
 * `{ error, retryable }` as the engine tests (test/engine) see them, for each kind of error.
 */
import { batchFailure } from '../../../nodes/shared/items';
import { InputError } from '../../../src/errors';
import { DeadlineError, LedgerBusyError, OutcomeUnknownError } from '../../../src/db/bounds';
import { InvalidSchemaNameError } from '../../../src/db/identifiers';
import { MigrationLockTimeoutError, PackageFileMissingError, SchemaNotReadyError } from '../../../src/db/migrate';
import { EndpointError } from '../../../src/db/endpoint';

const fns = (onError?: string) => ({ continueOnFail: () => true, getNode: () => ({ name: 'n', onError }) }) as never;
const pg = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'ERROR' });
const head = 'Reserve Operation failed and nothing of this batch was recorded (2 item(s)): ';

describe('batchFailure reads the error model', () => {
	it.each([
		['a bound (LedgerBusyError)', new LedgerBusyError('The database did not answer in time', '55P03'), 'the database refused the statement (SQLSTATE 55P03): The database did not answer in time', true],
		['the client deadline', new DeadlineError(32000), 'the database connection failed: The database did not answer within 32000 ms', true],
		['a migration lock', new MigrationLockTimeoutError('ol', 100, 'advisory lock'), 'the database refused the statement (SQLSTATE 55P03): Applying the ledger schema "ol"', true],
		['bad input', new InputError('Give 1 to 20 priority groups'), 'the input is not valid: Give 1 to 20 priority groups', false],
		['a bad schema name', new InvalidSchemaNameError('Bad'), "the credential's schema setting is not usable: Invalid schema name", false],
		['a schema not applied', new SchemaNotReadyError('ol', 0, 12), "the credential's schema setting is not usable: The ledger schema \"ol\" is not set up", false],
		['a file of the package missing', new PackageFileMissingError('/n/schema/migrations'), 'the package installation is incomplete: A file of the installed package is missing: /n/schema/migrations', false],
		['a bad connection string', new EndpointError('The connection string is empty'), 'the database refused the statement: The connection string is empty', false],
		['an input error whose text looks like a socket error', new InputError('Queue name "connection refused" is listed twice'), 'the input is not valid: Queue name', false],
		['a credential error whose text mentions a certificate', new EndpointError('The connection string parameter "sslrootcert" is not supported: it would read a file on the n8n host. Put the CA certificate into the credential\'s CA Certificate field.'), 'the database refused the statement: The connection string parameter', false],
		['pg: permission denied', pg('42501', 'permission denied for function reserve_operations'), 'the database refused the statement (SQLSTATE 42501): permission denied', false],
		['pg: too many connections', pg('53300', 'sorry, too many clients already'), 'the database refused the statement (SQLSTATE 53300): sorry, too many clients already', true],
		['pg: admin shutdown', pg('57P01', 'terminating connection due to administrator command'), 'the database connection failed: terminating connection', true],
		['socket: refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), 'the database connection failed: connect connection refused 127.0.0.1:1', true],
		['TLS', Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }), 'the database connection failed: SSL verification failed (SELF_SIGNED_CERT_IN_CHAIN)', true],
	])('%s', (_what, e, message, retryable) => {
		const items = batchFailure(fns(), e, 'Reserve Operation', [4, 9]);
		expect(items.map((i) => i.pairedItem)).toEqual([{ item: 4 }, { item: 9 }]);
		for (const i of items) {
			expect(Object.keys(i.json).sort()).toEqual(['error', 'retryable']);
			expect(String(i.json.error).startsWith(head + message)).toBe(true);
			expect(i.json.retryable).toBe(retryable);
		}
	});

	it('per item where the model says so (OutcomeUnknownError)', () => {
		const items = batchFailure(fns(), new OutcomeUnknownError(new Error('Connection terminated'), [false, true]), 'Enqueue', [0, 1]);
		expect(items.map((i) => i.json.retryable)).toEqual([false, true]);
	});

	it("under Continue (using error output) the item is n8n's { error } alone", () => {
		const [item] = batchFailure(fns('continueErrorOutput'), new LedgerBusyError('busy', '57014'), 'Reserve Operation', [0]);
		expect(Object.keys(item.json)).toEqual(['error']);
	});
});
