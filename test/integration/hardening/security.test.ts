/**
 * Case 6: no credential (password, connection string) and no payload secret ever appears in an
 * error or a log line. A private Postgres with scram-sha-256 password auth; every failure path
 * (credential test, node execution, the trigger's start, connection refused, an SQL error that
 * carries the row in its DETAIL) is collected: thrown messages, descriptions, error items, and
 * everything written to the console meanwhile; none may contain a secret.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { randomBytes } from 'node:crypto';
import type { ICredentialsDecrypted, ICredentialTestFunctions, ITriggerFunctions } from 'n8n-workflow';
import { Pool } from 'pg';
import { ledgerConnectionTest } from '../../../nodes/shared/connection';
import { PriorityDequeueTrigger } from '../../../nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node';
import { migrate } from '../../../src/db/migrate';
import { closeAllPools } from '../../../src/db/pool';
import { freePort, startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';
import { DEFAULT_PRIORITY_GROUPS, confirm, enqueue, reserve, settle } from './run';

jest.setTimeout(120_000);

const PASSWORD = `Pw-${randomBytes(9).toString('base64url')}`;
const WRONG = `Wrong-${randomBytes(9).toString('base64url')}`;
const PAYLOAD_SECRET = `card-4242-${randomBytes(6).toString('hex')}`;
const SCHEMA = 'hz_sec';
let pg: PrivatePostgres;
const seen: string[] = [];
const consoleSpies: jest.SpyInstance[] = [];

beforeAll(async () => {
	pg = await startPrivatePostgres({ name: 'security', superuserPassword: PASSWORD });
	const pool = new Pool({ connectionString: pg.url, max: 1 });
	await migrate(pool, ledgerSchema(SCHEMA), true);
	// An SQL error whose DETAIL carries the whole row, payload included.
	await pool.query(`ALTER TABLE "${SCHEMA}".operations ADD CONSTRAINT no_cards CHECK (request::text NOT LIKE '%card-4242-%')`);
	await pool.end();
	for (const m of ['log', 'info', 'warn', 'error', 'debug'] as const) {
		consoleSpies.push(jest.spyOn(console, m).mockImplementation((...args: unknown[]) => void seen.push(args.map(String).join(' '))));
	}
});
afterAll(async () => {
	for (const s of consoleSpies) s.mockRestore();
	await closeAllPools();
	await pg?.destroy();
});

const secrets = () => [PASSWORD, WRONG, encodeURIComponent(PASSWORD), encodeURIComponent(WRONG), PAYLOAD_SECRET, pg.url, pg.urlFor('postgres', WRONG)];
function record(...texts: unknown[]) {
	for (const t of texts) if (t !== undefined && t !== null) seen.push(typeof t === 'string' ? t : JSON.stringify(t));
}
function expectClean(texts: string[]) {
	const all = texts.join('\n');
	for (const s of secrets()) expect(all).not.toContain(s);
}
async function credentialTest(data: Record<string, unknown>) {
	const r = await ledgerConnectionTest.call({} as ICredentialTestFunctions, { id: '1', name: 'c', type: 'operationLedgerPostgresApi', data } as ICredentialsDecrypted);
	record(r.message);
	return r;
}
const conn = (password: string, port = pg.port) => ({
	connectionType: 'connectionString',
	connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/ledger`,
	ssl: 'disable',
	schema: SCHEMA,
	autoApplySchema: false,
	maxConnections: 2,
});
const fields = (password: string, port = pg.port) => ({
	connectionType: 'fields',
	host: '127.0.0.1',
	port,
	database: 'ledger',
	user: 'postgres',
	password,
	ssl: 'disable',
	schema: SCHEMA,
	autoApplySchema: false,
});

async function nodeFailure(p: Promise<unknown>, cofP?: Promise<Array<Array<{ json: Record<string, unknown> }>>>) {
	const r = await settle(p);
	expect(r.ok).toBe(false);
	const e = (r as { error: Error & { description?: string } }).error;
	record(e.message, e.description, e.stack);
	if (cofP) {
		const out = await cofP;
		for (const it of out[0]) record(it.json.error);
	}
	return e;
}

function fakeTrigger(creds: Record<string, unknown>): ITriggerFunctions {
	const logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((l) => [l, (m: string) => record(m)]));
	return {
		getCredentials: async () => creds,
		getNodeParameter: (name: string, fallback?: unknown) =>
			(
				{
					queue: 'jobs',
					mode: 'claim',
					priorityGroups: DEFAULT_PRIORITY_GROUPS,
					pollSeconds: 1,
					maxInFlight: 1,
					batchSize: 5,
					leaseSeconds: 60,
					useListen: true,
					options: {},
				} as Record<string, unknown>
			)[name] ?? fallback,
		getMode: () => 'trigger',
		getNode: () => ({ name: 'Trigger', type: 'x', typeVersion: 1, position: [0, 0], parameters: {}, id: 't' }),
		logger,
		helpers: { createDeferredPromise: () => ({ promise: Promise.resolve(), resolve: () => undefined, reject: () => undefined }) },
		emit: () => undefined,
	} as unknown as ITriggerFunctions;
}

describe('no secret in errors or logs', () => {
	it('the right password works (so the failures below are about the password)', async () => {
		expect((await credentialTest(fields(PASSWORD))).status).toBe('OK');
		expect((await credentialTest(conn(PASSWORD))).status).toBe('OK');
	});

	it('bad password: credential test (fields and connection string) names the cause, not the secret', async () => {
		const a = await credentialTest(fields(WRONG));
		expect(a).toEqual({ status: 'Error', message: 'Authentication failed: wrong password for user "postgres"' });
		const b = await credentialTest(conn(WRONG));
		expect(b.status).toBe('Error');
		expect(b.message).toMatch(/Authentication failed/);
		expectClean(seen);
	});

	it('bad password: node executions (thrown and continueOnFail) and the trigger', async () => {
		const e1 = await nodeFailure(
			reserve(conn(WRONG), [`sec:${PAYLOAD_SECRET}`], { request: { card: PAYLOAD_SECRET } }),
			reserve(conn(WRONG), [`sec:x`], { request: { card: PAYLOAD_SECRET } }, { continueOnFail: true }),
		);
		expect(e1.message).toMatch(/the database connection failed: password authentication failed for user "postgres"/);
		await nodeFailure(enqueue(fields(WRONG), 'jobs', [{ card: PAYLOAD_SECRET }]));
		const t = await settle(new PriorityDequeueTrigger().trigger.call(fakeTrigger(conn(WRONG))));
		expect(t.ok).toBe(false);
		record((t as { error: Error }).error.message, (t as { error: Error }).error.stack);
		expect((t as { error: Error }).error.message).toMatch(/password authentication failed/);
		expectClean(seen);
	});

	it('connection refused: credential test, node execution and trigger', async () => {
		const closed = await freePort();
		const a = await credentialTest(conn(PASSWORD, closed));
		expect(a).toEqual({ status: 'Error', message: 'Connection refused at the connection string: is Postgres running and listening there?' });
		expect((await credentialTest(fields(PASSWORD, closed))).message).toBe(`Connection refused at 127.0.0.1:${closed}: is Postgres running and listening there?`);
		const e = await nodeFailure(
			confirm(conn(PASSWORD, closed), [{ key: 'k', token: '3f1b6a52-7d0e-4c8b-9a51-0c2d4e6f8a10' }]),
			confirm(conn(PASSWORD, closed), [{ key: 'k', token: '3f1b6a52-7d0e-4c8b-9a51-0c2d4e6f8a10' }], {}, { continueOnFail: true }),
		);
		expect(e.message).toMatch(/^Confirm Operation failed and nothing of this batch was recorded \(1 item\(s\)\): the database connection failed: connect connection refused 127\.0\.0\.1:\d+$/);
		const t = await settle(new PriorityDequeueTrigger().trigger.call(fakeTrigger(conn(PASSWORD, closed))));
		expect(t.ok).toBe(false);
		record((t as { error: Error }).error.message);
		expectClean(seen);
	});

	it('an SQL error whose DETAIL holds the row (payload secret) reports the constraint, not the row', async () => {
		const e = await nodeFailure(
			reserve(conn(PASSWORD), ['sec:card:1'], { request: { card: PAYLOAD_SECRET } }),
			reserve(conn(PASSWORD), ['sec:card:2'], { request: { card: PAYLOAD_SECRET } }, { continueOnFail: true }),
		);
		expect(e.message).toMatch(/the database refused the statement \(SQLSTATE 23514\): new row for relation "operations" violates check constraint "no_cards"/);
		expectClean(seen);
		expect(await pg.sql(`SELECT 1 FROM "${SCHEMA}".operations`)).toEqual([]);
	});

	it('a payload secret in a bad-input error is not echoed', async () => {
		const e = await nodeFailure(reserve(conn(PASSWORD), [`sec:\u0000:${PAYLOAD_SECRET}`], { request: { card: PAYLOAD_SECRET } }));
		expect(e.message).toMatch(/control character/);
		expectClean(seen);
	});

	it('the credential, once used, is not printed anywhere by the package (console stayed silent of secrets)', async () => {
		await reserve(conn(PASSWORD), ['sec:ok:1'], { request: { note: 'fine' } });
		expectClean(seen);
		expect(seen.length).toBeGreaterThan(5); // the checks above did look at real messages
	});
});
