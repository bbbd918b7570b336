/** Parameters of Operation Ledger Admin, per operation. */
import type { INodeProperties } from 'n8n-workflow';

const show = (...operation: string[]) => ({ show: { operation } });

export const adminProperties: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Compact', value: 'compact', description: 'Drop bodies and old events of long-settled operations, keeping what answers a late retry', action: 'Compact settled operations' },
			{ name: 'Get', value: 'get', description: 'Look one operation up by key, with its event history', action: 'Get an operation' },
			{ name: 'Hard Delete', value: 'hardDelete', description: 'Forget long-settled operations entirely: a retry of a deleted key runs its write again', action: 'Hard delete settled operations' },
			{ name: 'Health', value: 'health', description: 'Counts by status, oldest unknown, review backlog, events per day, table sizes', action: 'Read ledger health' },
			{ name: 'List', value: 'list', description: 'List operations that need a person: unknown, review, expired leases, failed', action: 'List operations' },
			{ name: 'Settle by Hand', value: 'settle', description: 'A named person decides whether an unknown or review operation happened', action: 'Settle an operation by hand' },
		],
		default: 'list',
	},

	// Get, Settle
	{
		displayName: 'Operation Key',
		name: 'operationKey',
		type: 'string',
		default: '',
		required: true,
		placeholder: 'payment:charge:order-1001:v1',
		description: 'The business key the operation was reserved with',
		displayOptions: show('get', 'settle'),
	},
	{
		displayName: 'Max Events',
		name: 'maxEvents',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 10000 },
		default: 500,
		description: 'Most events to return (the newest; "eventsTotal" says how many exist)',
		displayOptions: show('get'),
	},

	// List
	{
		displayName: 'List',
		name: 'kind',
		type: 'options',
		options: [
			{ name: 'Expired Leases', value: 'expired_lease', description: 'Reserved, but the lease ended without a confirmation' },
			{ name: 'Failed', value: 'failed', description: 'Confirmed failures, oldest first' },
			{ name: 'Needs Review', value: 'review', description: 'Reconciliation gave up: a person must decide' },
			{ name: 'Unknown', value: 'unknown', description: 'The outcome is not known yet' },
		],
		default: 'review',
		displayOptions: show('list'),
	},
	{
		displayName: 'Minimum Age (Seconds)',
		name: 'minAgeSeconds',
		type: 'number',
		typeOptions: { minValue: 0 },
		default: 0,
		description: 'Only operations at least this old, in seconds (e.g. 3600 for an alert on anything unknown for an hour). 0: all.',
		displayOptions: show('list'),
	},
	{
		displayName: 'Target',
		name: 'target',
		type: 'string',
		default: '',
		description: 'Only operations for this target. Empty: all.',
		displayOptions: show('list'),
	},
	{
		displayName: 'Page Size',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 1000 },
		default: 50,
		description: 'Max number of results to return',
		displayOptions: show('list'),
	},
	{
		displayName: 'Cursor',
		name: 'cursor',
		type: 'string',
		default: '',
		description: 'The "nextCursor" of the previous page, for the next one. Empty: the first page.',
		displayOptions: show('list'),
	},
	{
		displayName: 'Output',
		name: 'listOutput',
		type: 'options',
		options: [
			{ name: 'One Item per Operation', value: 'items', description: 'Each item also carries "page" (total, nextCursor)' },
			{ name: 'One Item per Page', value: 'page', description: 'A single item with total, items and nextCursor' },
		],
		default: 'items',
		displayOptions: show('list'),
	},

	// Settle
	{
		displayName: 'Decision',
		name: 'decision',
		type: 'options',
		options: [
			{ name: 'Happened', value: 'happened', description: 'The write took effect: record success with its reference; later Reserves answer Already Succeeded' },
			{ name: 'Did Not Happen', value: 'not_happened', description: 'The write did not take effect: record a retryable failure; the next Reserve may proceed' },
		],
		default: 'happened',
		displayOptions: show('settle'),
	},
	{
		displayName: 'External Reference',
		name: 'externalReference',
		type: 'string',
		default: '',
		description: "The target's ID for the write (required for Happened), e.g. the payment ID",
		displayOptions: show('settle'),
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		required: true,
		description: 'Why: what the person checked (stored in the event log)',
		displayOptions: show('settle'),
	},
	{
		displayName: 'Decided By',
		name: 'decidedBy',
		type: 'string',
		default: '',
		required: true,
		placeholder: 'alice@example.com',
		description: 'The person who decides (stored on the operation and in the event log)',
		displayOptions: show('settle'),
	},

	// Health
	{
		displayName: 'Days of Events',
		name: 'days',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 366 },
		default: 7,
		description: 'Events per day for this many days (UTC), today included',
		displayOptions: show('health'),
	},

	// Compact, Hard Delete
	{
		displayName: 'I Understand a Deleted Key That Is Retried Runs Its Write Again',
		name: 'acknowledge',
		type: 'boolean',
		default: false,
		description:
			'Whether to really delete. Hard delete removes the operation and its events: the ledger forgets the key, so a very late retry of it is a new operation and sends the write again. Compact keeps the promise; prefer it.',
		displayOptions: show('hardDelete'),
	},
	{
		displayName: 'Settled More Than (Days)',
		name: 'olderThanDays',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 36500 },
		default: 90,
		description: 'Only operations settled (succeeded or failed) more than this many days ago. Unknown, review and reserved operations are never touched.',
		displayOptions: show('compact', 'hardDelete'),
	},
	{
		displayName: 'Batch Size',
		name: 'batchSize',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 10000 },
		default: 1000,
		description: 'Operations per batch; each batch is one short transaction that skips rows a workflow holds',
		displayOptions: show('compact', 'hardDelete'),
	},
	{
		displayName: 'Max Batches',
		name: 'maxBatches',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 100000 },
		default: 100,
		description: 'Stop after this many batches; the next run continues',
		displayOptions: show('compact', 'hardDelete'),
	},
	{
		displayName: 'Max Duration (Seconds)',
		name: 'maxDurationSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 3600 },
		default: 60,
		description: 'Start no new batch after this many seconds; the next run continues',
		displayOptions: show('compact', 'hardDelete'),
	},
	{
		displayName: 'Statement Timeout (Ms)',
		name: 'statementTimeoutMs',
		type: 'number',
		typeOptions: { minValue: 100, maxValue: 600000 },
		default: 30000,
		description: 'Statement and lock timeout of each batch, in milliseconds; a batch that exceeds it is rolled back',
		displayOptions: show('compact', 'hardDelete'),
	},
];
