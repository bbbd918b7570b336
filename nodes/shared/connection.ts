/**
 * The bridge between an n8n credential and the core: credential fields → ConnectionConfig → the
 * process-wide pool, with the schema checked (or applied) once per pool.
 */
import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	IExecuteFunctions,
	INodeCredentialTestResult,
	ITriggerFunctions,
} from 'n8n-workflow';
import type { Pool as PgPool } from 'pg';
import { IsolatedClient } from '../../src/vendor';
import { ledgerSchema, type LedgerSchema } from '../../src/db/identifiers';
import { describeSchemaGap, ensureSchema, probeConnection, schemaGap } from '../../src/db/migrate';
import { getPool, toClientConfig, type ConnectionConfig, type LedgerPool, type SslMode } from '../../src/db/pool';
import { beginSql, toBounds, toConnectTimeout, type Bounds } from '../../src/db/bounds';
import { assessReplication, readReplication, type ReplicationReport } from '../../src/db/replication';
import { EndpointError, resolveEndpoint } from '../../src/db/endpoint';
import { loadLedgerCredential } from './credential';
import { LIMITS } from '../../src/limits';

export { CREDENTIAL_NAME, isCredentialLoadError, loadLedgerCredential } from './credential';

/** Maps the credential's fields to a ConnectionConfig. */
export function toConnectionConfig(c: ICredentialDataDecryptedObject): ConnectionConfig {
	const fromString = c.connectionType === 'connectionString';
	return {
		connectionString: fromString ? String(c.connectionString ?? '') : undefined,
		host: fromString ? undefined : String(c.host ?? 'localhost'),
		port: fromString ? undefined : Number(c.port ?? 5432),
		database: fromString ? undefined : String(c.database ?? 'postgres'),
		user: fromString ? undefined : String(c.user ?? 'postgres'),
		password: fromString ? undefined : String(c.password ?? ''),
		ssl: (c.ssl as SslMode) ?? 'disable',
		ca: c.ca ? String(c.ca) : undefined,
		schema: String(c.schema ?? 'operation_ledger'),
		autoApplySchema: c.autoApplySchema !== false,
		maxConnections: c.maxConnections ? Number(c.maxConnections) : LIMITS.maxConnections.default,
		connectTimeoutMs: toConnectTimeout(c.connectTimeoutMs),
		...toBounds({ statementTimeoutMs: c.statementTimeoutMs, lockTimeoutMs: c.lockTimeoutMs }),
	};
}

export interface LedgerConnection {
	pool: LedgerPool;
	config: ConnectionConfig;
	/** The credential's schema, validated and quoted once when the connection was opened; every core function takes it (src/db/identifiers.ts). */
	schema: LedgerSchema;
	/** statement_timeout and lock_timeout for each batch transaction (credential fields). */
	bounds: Bounds;
}

/**
 * Resolves the node's credential to a ready pool (schema checked or applied).
 * @throws NodeOperationError (isCredentialLoadError) when n8n cannot load the credential (nothing reaches the database).
 */
export async function getLedgerConnection(fns: IExecuteFunctions | ITriggerFunctions): Promise<LedgerConnection> {
	return openLedgerConnection(toConnectionConfig(await loadLedgerCredential(fns)));
}

/**
 * The one door to the database for every node and the trigger: validates and quotes the schema
 * name once (ledgerSchema(), src/db/identifiers.ts; throws InvalidSchemaNameError, not retryable,
 * before anything is created), takes the pool handle for `config` (src/db/pool.ts: it holds no pool
 * between calls), applies or checks the schema (ensureSchema: throws when it is missing or newer
 * and Auto-Apply is off), and returns the pool, the schema (a LedgerSchema: the value every core
 * call of this connection takes, never validated again) and the credential's bounds.
 */
export async function openLedgerConnection(config: ConnectionConfig): Promise<LedgerConnection> {
	const schema = ledgerSchema(config.schema);
	const pool = getPool(config);
	await ensureSchema(pool, schema, config.autoApplySchema !== false);
	return { pool, config, schema, bounds: toBounds(config) };
}

/**
 * The credential's "Test" button: connects with a fresh client (not the pool), reports a clear
 * reason when it cannot (bad password, missing database, unreachable host, SSL), checks the
 * schema version when the nodes may not apply it themselves, and reads whether the promise
 * survives a failover of this server (src/db/replication.ts).
 *
 * n8n's editor shows the message only when a test fails (a success is a fixed banner), so what an
 * operator must hear is a failure, and everything else passes:
 * - fails when the nodes cannot write here: a standby, a read-only role, or commits that wait for a
 *   synchronous standby that is not connected (every write would hang until the nodes give up);
 * - fails when standbys are connected and commits do not wait for them (asynchronous replication:
 *   a failover may lose reported outcomes), unless the credential's Failover Check is "Report in
 *   Health Only" (asynchronous replication chosen knowingly);
 * - passes on a single server without replication (the common case), with synchronous standbys,
 *   and when this role cannot see whether the connected standbys are the synchronous ones (Admin
 *   Health says what is unknown and which grant would tell).
 */
export async function ledgerConnectionTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	// Never throws: every failure, including a malformed credential, is an answer.
	let config: ConnectionConfig;
	let schema: LedgerSchema;
	let client: InstanceType<typeof IsolatedClient> | undefined;
	try {
		config = toConnectionConfig(credential?.data ?? {});
		schema = ledgerSchema(config.schema);
		resolveEndpoint(config);
	} catch (e) {
		return { status: 'Error', message: e instanceof EndpointError || /schema/i.test((e as Error)?.message ?? '') ? (e as Error).message : 'The credential is incomplete or malformed' };
	}
	try {
		client = new IsolatedClient(toClientConfig({ ...config, connectTimeoutMs: 5000 }));
		// A backend that dies after connecting emits 'error' on the client: never unhandled.
		client.on('error', () => undefined);
		await client.connect();
		const c = client;
		const state = await probeConnection({ query: c.query.bind(c) } as unknown as PgPool, schema, toBounds(config));
		const gap = schemaGap(state);
		// Behind is fine when the nodes may apply the schema; a newer package's schema never is.
		if (gap === 'newer' || (gap === 'apply' && !config.autoApplySchema)) {
			return { status: 'Error', message: `Connected, but: ${describeSchemaGap(config.schema, state)}` };
		}
		await c.query(beginSql(toBounds(config)));
		let replication: ReplicationReport;
		try {
			replication = assessReplication(await readReplication(c));
		} finally {
			await c.query('ROLLBACK').catch(() => undefined);
		}
		const refusal = failoverRefusal(replication, credential?.data?.failoverCheck === 'report');
		if (refusal) return { status: 'Error', message: refusal };
		return { status: 'OK', message: 'Connection successful' };
	} catch (e) {
		return { status: 'Error', message: describeConnectError(e, config) };
	} finally {
		await client?.end().catch(() => undefined);
	}
}

/**
 * The credential test's answer to a replication report: a message when the test must fail, else
 * undefined (see ledgerConnectionTest). `reportOnly`: asynchronous replication was chosen
 * knowingly (Failover Check "Report in Health Only"), so only a server the nodes cannot write on fails.
 */
export function failoverRefusal(r: ReplicationReport, reportOnly: boolean): string | undefined {
	const cannotWrite = r.verdict === 'standby' || r.verdict === 'read_only' || r.verdict === 'writes_blocked';
	if (!cannotWrite && (r.verdict !== 'asynchronous' || reportOnly)) return undefined;
	const head = cannotWrite ? 'Connected, but the nodes cannot write here' : 'Connected, and the nodes work, but the promise does not survive a failover';
	const tail = cannotWrite ? '' : ' To accept that knowingly, set Failover Check to "Report in Health Only".';
	return `${head}: ${r.message} What to change: ${r.advice.join(' ')}${tail}`;
}

/** Turns a pg/socket error into a sentence a user can act on. Never includes the password. */
export function describeConnectError(e: unknown, config: ConnectionConfig): string {
	const err = e as { code?: string; message?: string };
	let endpoint: ReturnType<typeof resolveEndpoint> | undefined;
	try {
		endpoint = resolveEndpoint(config);
	} catch {
		endpoint = undefined;
	}
	// A connection string is not echoed (not even its host): it may be a secret as a whole.
	const where = config.connectionString !== undefined ? 'the connection string' : endpoint ? `${endpoint.host}:${endpoint.port}` : 'the configured host';
	if (e instanceof EndpointError) return e.message;
	switch (err?.code) {
		case '28P01':
			return `Authentication failed: wrong password for user "${endpoint?.user ?? config.user ?? ''}"`;
		case '28000':
			return `Authentication refused: ${err.message}`;
		case '3D000':
			return `The database does not exist: ${err.message}`;
		case '55P03':
			return `Connected, but the schema "${config.schema}" is locked by another session (a migration or maintenance?): gave up after the Lock Timeout (${toBounds(config).lockTimeoutMs} ms)`;
		case '57014':
			return `Connected, but reading the schema "${config.schema}" took longer than the Statement Timeout (${toBounds(config).statementTimeoutMs} ms)`;
		case 'ECONNREFUSED':
			return `Connection refused at ${where}: is Postgres running and listening there?`;
		case 'ENOTFOUND':
		case 'EAI_AGAIN':
			return `Host not found: ${config.connectionString !== undefined ? where : (endpoint?.host ?? where)}`;
		case 'DEPTH_ZERO_SELF_SIGNED_CERT':
		case 'SELF_SIGNED_CERT_IN_CHAIN':
		case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
		case 'ERR_TLS_CERT_ALTNAME_INVALID':
		case 'CERT_HAS_EXPIRED':
		case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
			return `SSL verification failed (${err.code}): check the CA certificate and that the host name matches the server certificate`;
		default:
			if (/client password must be a non-empty string/i.test(err?.message ?? '')) {
				return `Authentication failed: no password given for user "${endpoint?.user ?? ''}" (the n8n host's PGPASSWORD and ~/.pgpass are never used)`;
			}
			if (/does not support SSL/i.test(err?.message ?? '')) {
				return endpoint?.sslModeFrom === 'connection string'
					? `The server does not support SSL, and the connection string asks for sslmode ${endpoint.sslMode}: remove it, or enable SSL on the server`
					: 'The server does not support SSL: set SSL to Disable, or enable SSL on the server';
			}
			if (/timeout/i.test(err?.message ?? '')) return `Timed out connecting to ${where}`;
			return `Could not connect: ${redact(err?.message ?? String(e), config)}`;
	}
}

/** Removes the password and connection string from a message. */
export function redact(message: string, config: ConnectionConfig): string {
	let out = message;
	let parsed: string | undefined;
	try {
		parsed = resolveEndpoint(config).password;
	} catch {
		parsed = undefined;
	}
	for (const secret of [config.password, config.connectionString, parsed]) {
		if (secret && secret.length >= 3) out = out.split(secret).join('***');
	}
	return out;
}
