import type { ICredentialType, INodeProperties, Icon } from 'n8n-workflow';
import { LIMITS } from '../src/limits';

/**
 * The Postgres database that holds the operation ledger and the task queue.
 * Tested by the nodes' `ledgerConnectionTest` method, which really connects and checks the schema.
 */
export class OperationLedgerPostgresApi implements ICredentialType {
	name = 'operationLedgerPostgresApi';

	displayName = 'Operation Ledger Postgres';

	icon: Icon = { light: 'file:../nodes/shared/ledger.svg', dark: 'file:../nodes/shared/ledger.dark.svg' };

	documentationUrl = 'https://github.com/operation-ledger/n8n-nodes-operation-ledger#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'Connect Using',
			name: 'connectionType',
			type: 'options',
			options: [
				{ name: 'Fields', value: 'fields' },
				{ name: 'Connection String', value: 'connectionString' },
			],
			default: 'fields',
		},
		// eslint-disable-next-line @n8n/community-nodes/credential-unnecessary-password -- it carries the password
		{
			displayName: 'Connection String',
			name: 'connectionString',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			placeholder: 'postgres://user:password@db.example.com:5432/ledger',
			description:
				'A postgres:// URL. Its sslmode (or ssl) can only make the SSL field below stricter: the stricter of the two is used. Parameters that read files (sslrootcert, sslcert, sslkey) are refused: use the CA Certificate field.',
			displayOptions: { show: { connectionType: ['connectionString'] } },
		},
		{
			displayName: 'Host',
			name: 'host',
			type: 'string',
			default: 'localhost',
			displayOptions: { show: { connectionType: ['fields'] } },
		},
		{
			displayName: 'Port',
			name: 'port',
			type: 'number',
			default: 5432,
			displayOptions: { show: { connectionType: ['fields'] } },
		},
		{
			displayName: 'Database',
			name: 'database',
			type: 'string',
			default: 'postgres',
			displayOptions: { show: { connectionType: ['fields'] } },
		},
		{
			displayName: 'User',
			name: 'user',
			type: 'string',
			default: 'postgres',
			displayOptions: { show: { connectionType: ['fields'] } },
		},
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { connectionType: ['fields'] } },
		},
		{
			displayName: 'SSL',
			name: 'ssl',
			type: 'options',
			options: [
				{ name: 'Disable', value: 'disable', description: 'Plain TCP (loopback or a trusted network only)' },
				{ name: 'Require', value: 'require', description: 'Encrypt, but do not check the server certificate' },
				{
					name: 'Verify CA',
					value: 'verify-ca',
					description: 'Encrypt and check that the server certificate was signed by the CA below (not the host name)',
				},
				{
					name: 'Verify Full',
					value: 'verify-full',
					description: 'Encrypt and check the server certificate and host name against the CA below',
				},
			],
			default: 'disable',
			description:
				"How to encrypt the connection. A connection string's sslmode may make this stricter, never weaker (order: Disable < Require < Verify CA < Verify Full).",
		},
		{
			displayName: 'CA Certificate',
			name: 'ca',
			type: 'string',
			typeOptions: { rows: 4 },
			default: '',
			placeholder: '-----BEGIN CERTIFICATE-----',
			description: "PEM certificate of the CA that signed the server's certificate. Empty: the system's trusted CAs.",
			displayOptions: { show: { ssl: ['verify-ca', 'verify-full'] } },
		},
		{
			displayName: 'Schema',
			name: 'schema',
			type: 'string',
			default: 'operation_ledger',
			description:
				'Schema holding the ledger and queue tables: 1 to 63 characters from a-z, 0-9 and _. Two workflows with different schemas never see each other\'s operations.',
		},
		{
			displayName: 'Apply Schema Automatically',
			name: 'autoApplySchema',
			type: 'boolean',
			default: true,
			description:
				'Whether the nodes may create or upgrade the schema on first use (under an advisory lock). Switch off when a DBA applies schema/apply.sql with psql and the n8n role may not run DDL.',
		},
		{
			displayName: 'Max Connections',
			name: 'maxConnections',
			type: 'number',
			typeOptions: { minValue: LIMITS.maxConnections.min, maxValue: LIMITS.maxConnections.max },
			default: LIMITS.maxConnections.default,
			description:
				'Upper bound of connections each n8n process (main or worker) opens to this database for these nodes. Idle connections close after 10 seconds.',
		},
		{
			displayName: 'Connection Timeout (Ms)',
			name: 'connectTimeoutMs',
			type: 'number',
			typeOptions: { minValue: LIMITS.connectTimeoutMs.min, maxValue: LIMITS.connectTimeoutMs.max },
			default: LIMITS.connectTimeoutMs.default,
			description:
				'Longest wait for a connection from the pool (all Max Connections busy) or for a new connection to be set up, in milliseconds. The item then fails with a retry-safe error; nothing was recorded.',
		},
		{
			displayName: 'Statement Timeout (Ms)',
			name: 'statementTimeoutMs',
			type: 'number',
			typeOptions: { minValue: LIMITS.statementTimeoutMs.min, maxValue: LIMITS.statementTimeoutMs.max },
			default: LIMITS.statementTimeoutMs.default,
			description:
				'Longest time one statement of these nodes may run in the database, in milliseconds (SET LOCAL statement_timeout): every ledger batch and every queue call, the trigger\'s included. When it fires the batch is rolled back: nothing of it was recorded and running it again is safe. A COMMIT waiting for a synchronous standby is cancelled after this + 1 second; the batch is then recorded on the server but not confirmed by the standby (the error says so).',
		},
		{
			displayName: 'Lock Timeout (Ms)',
			name: 'lockTimeoutMs',
			type: 'number',
			typeOptions: { minValue: LIMITS.lockTimeoutMs.min, maxValue: LIMITS.lockTimeoutMs.max },
			default: LIMITS.lockTimeoutMs.default,
			description:
				'Longest wait for a lock another transaction holds, in milliseconds (SET LOCAL lock_timeout). Ledger: that operation key then fails with a retry-safe error and the other keys of the batch are not held up. Queue: the settle call fails with a retry-safe error, nothing changed (claims skip locked tasks).',
		},
		{
			displayName: 'Failover Check',
			name: 'failoverCheck',
			type: 'options',
			options: [
				{
					name: 'Fail the Test on Asynchronous Standbys',
					value: 'strict',
					description: 'The credential test fails when standbys stream from this server and commits do not wait for them',
				},
				{
					name: 'Report in Health Only',
					value: 'report',
					description: 'Asynchronous replication is a deliberate choice: the test passes, Operation Ledger Admin → Health still reports it',
				},
			],
			default: 'strict',
			description:
				'What the credential test does when a failover of this server could lose outcomes the nodes reported (asynchronous standbys). It always fails on a standby, a read-only role, or when every commit waits for a synchronous standby that is not connected. The nodes never refuse to run because of it. See docs/high-availability.md.',
		},
	];
}
