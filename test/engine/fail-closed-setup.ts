/**
 * What the fail-closed engine tests (test/engine/fail-closed-*.test.ts) share: one test schema and
 * one engine per test file (setUpFailClosedEngine registers the hooks), two credentials (`OK`, and
 * `DOWN` on a closed loopback port), the node under test `UT` with the settings of a case, and
 * checks against the database.
 */
import net from 'node:net';
import type { INode, INodeExecutionData, INodeTypeDescription } from 'n8n-workflow';
import { confirmOperations, prepareConfirmItem } from '../../src/ledger/confirm';
import { prepareReserveItem, reserveOperations } from '../../src/ledger/reserve';
import { closeAllPools as closeSrcPools } from '../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../helpers/db';
import { testCredentials } from '../helpers/fakeExecute';
import { Engine, PKG, ROOT, node } from './harness';

export type OnError = 'stopWorkflow' | 'continueRegularOutput' | 'continueErrorOutput';
export type Mode = 'valid' | 'invalid' | 'down' | 'nothing';
export interface Settings {
	onError: OnError;
	alwaysOutputData: boolean;
	retryOnFail: boolean;
	executeOnce: boolean;
}

/** This file's test schema and engine, set by setUpFailClosedEngine's beforeAll. */
export let db: Awaited<ReturnType<typeof testDatabase>>;
export let engine: Engine;
export const OK = { id: 'ok', name: 'ok' };
export const DOWN = { id: 'down', name: 'down' };

async function freePort(): Promise<number> {
	return new Promise((resolve) => {
		const srv = net.createServer();
		srv.listen(0, '127.0.0.1', () => {
			const port = (srv.address() as net.AddressInfo).port;
			srv.close(() => resolve(port));
		});
	});
}

/**
 * Registers the file's hooks: before all, a migrated test schema and an engine with the credentials
 * `ok` (that schema) and `down` (a closed loopback port); after all, the pools closed and the schema
 * dropped. Tests get 120 s each.
 */
export function setUpFailClosedEngine(): void {
	jest.setTimeout(120_000);
	beforeAll(async () => {
		db = await testDatabase({ prefix: 'ol_engine' });
		const closedPort = await freePort();
		engine = new Engine({
			credentials: {
				ok: testCredentials(DATABASE_URL, db.schema) as never,
				down: testCredentials(DATABASE_URL.replace(/@[^/]+\//, `@127.0.0.1:${closedPort}/`), db.schema) as never,
			},
		});
	});
	afterAll(async () => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		await (require(`${ROOT}/dist/src/db/pool.js`) as { closeAllPools(): Promise<void> }).closeAllPools();
		await closeSrcPools();
		await db.drop();
	});
}

/** Rows of a statement on the test schema pool. */
export const q = async <T = Record<string, unknown>>(sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows as T[];

/** Two unknown operations for target `t` (reserved, then confirmed unknown). */
export async function seedUnknown(t: string) {
	for (const k of ['a', 'b']) {
		const key = `${t}:${k}`;
		const [r] = await reserveOperations(db.pool, db.ledgerSchema, [prepareReserveItem(0, { operationKey: key, request: { key }, leaseSeconds: 60, target: t })]);
		await confirmOperations(db.pool, db.ledgerSchema, [prepareConfirmItem(0, { operationKey: key, leaseToken: r.leaseToken, outcome: 'unknown', reason: 'HTTP 504' })]);
		// Its settle window has passed, so Claim may take it now.
		await q(`UPDATE ${db.schemaSql}.operations SET settle_until = now() - interval '1 second' WHERE operation_key = $1`, [key]);
	}
}

/** A node of this package (version 1, its only version) with the settings under test. */
export function ut(type: string, parameters: INode['parameters'], s: Settings, down: boolean): INode {
	return node('UT', `${PKG}.${type}`, parameters, {
		typeVersion: 1,
		credentials: { operationLedgerPostgresApi: down ? DOWN : OK },
		onError: s.onError,
		alwaysOutputData: s.alwaysOutputData,
		retryOnFail: s.retryOnFail,
		maxTries: 2,
		waitBetweenTries: 1,
		executeOnce: s.executeOnce,
	});
}
/** A helper node of this package upstream of the one under test (plain settings). */
export function pre(name: string, type: string, parameters: INode['parameters']): INode {
	return node(name, `${PKG}.${type}`, parameters, { typeVersion: 1, credentials: { operationLedgerPostgresApi: OK } });
}

/** Asserts that a Proceed item of Reserve was reserved by the database in this run (its lease token is the stored one). */
export async function reserveDecided(item: INodeExecutionData): Promise<void> {
	const ledger = item.json.ledger as { operationKey: string; leaseToken: string; outcome: string };
	expect(ledger.outcome).toBe('proceed');
	// Tokens are stored only as SHA-256 hashes.
	const rows = await q(`SELECT status, lease_token_hash = sha256(uuid_send($2::uuid)) AS t FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [ledger.operationKey, ledger.leaseToken]);
	expect(rows).toEqual([{ status: 'reserved', t: true }]);
}

/** Reserve Operation's outputs. */
export const RESERVE_OUTPUTS = ['Unrecorded', 'Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'];
/** Reconcile Unknown: the same outputs for Claim and Resolve (nodes/ReconcileUnknown/outputs.ts). */
export const RECONCILE_OUTPUTS = ['Unrecorded', 'To Check', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];
/** Operation Ledger Admin: the same outputs for every operation (nodes/OperationLedgerAdmin/outputs.ts). */
export const ADMIN_OUTPUTS = ['Unrecorded', 'Result', 'Settled', 'Refused'];

export const ON_ERROR: OnError[] = ['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput'];

/** The parameters of Reserve: key and request from the input item. */
export const reserveParams = { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 't', request: '={{ $json }}', leaseSeconds: 300 };
/** Plain settings (Stop Workflow, nothing else on), with `over` applied. */
export const plain = (over: Partial<Settings> = {}): Settings => ({ onError: 'stopWorkflow', alwaysOutputData: false, retryOnFail: false, executeOnce: false, ...over });
/**
 * The output names the built node declares (dist/), in order: the tests wire their
 * sinks by these, so they test the node as n8n sees it, whatever its layout.
 */
export function declaredOutputs(type: string): string[] {
	const outputs = (engine.nodeTypes().getByName(`${PKG}.${type}`).description as INodeTypeDescription).outputs as Array<{ displayName: string }>;
	return outputs.map((o) => o.displayName);
}
/** Sinks for `outs`, plus the Error output n8n appends under Continue (using error output). */
export const withError = (outs: string[], s: Settings) => (s.onError === 'continueErrorOutput' ? [...outs, 'Error'] : outs);

