/**
 * Guarded HTTP Request: reserve, send, record, in one node (the node's one operation;
 * nodes/shared/router.ts). The rules of the request are the core's (src/ledger/guardedHttp.ts);
 * docs/nodes/GuardedHttpRequest.md describes the node for users.
 *
 * Per group of *Parallel Requests* items: one reserve_operations round trip; the items that got a
 * lease are sent at once with n8n's request helper (this.helpers.httpRequest, or
 * httpRequestWithAuthentication for a credential), each under its own total deadline (Timeout);
 * then one confirm_operations round trip records every answer. Nothing is sent for an item that
 * did not get a lease in this run, so a re-run of this node (n8n's Retry, a partial run in the
 * editor, a resent webhook, Retry On Fail) meets its own reservation (In Progress, Reconcile or
 * Done Before) and never sends twice.
 */
import {
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type IHttpRequestOptions,
	type INodeExecutionData,
	type INodeProperties,
} from 'n8n-workflow';
import { GUARDED_OUTPUTS, GUARDED_OUTPUT_LABELS, outputLabels, type GuardedOutput } from '../../src/ledger/states';
import { prepareReserveItem, reserveOperations, type ReserveItem, type ReserveResult } from '../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem, releaseUnsent, DEFAULT_MAX_RESPONSE_BYTES, type ConfirmItem, type ConfirmResultRow } from '../../src/ledger/confirm';
import { parseStatusOverrides, type StatusOverrides } from '../../src/ledger/classify';
import {
	BODY_TYPES,
	DEFAULT_IDEMPOTENCY_HEADER,
	DEFAULT_TIMEOUT_MS,
	GUARDED_METHODS,
	MAX_TIMEOUT_MS,
	classifySend,
	parseBody,
	prepareGuardedRequest,
	referenceAt,
	type GuardedRequest,
	type SendOutcome,
} from '../../src/ledger/guardedHttp';
import { recordedNextStep, reserveNextStep } from '../../src/ledger/nextStep';
import { InputError } from '../../src/errors';
import { OutcomeUnknownError } from '../../src/db/bounds';
import { cutText } from '../../src/text';
import { getLedgerConnection, type LedgerConnection } from '../shared/connection';
import { eventContext, jsonParameter } from '../shared/context';
import { batchFailure, errorItem, prepareItems, scrubSecrets } from '../shared/items';
import { operationKeyParameter, operationKeyProperties } from '../shared/operationKey';
import { UNRECORDED, emptyOutputs } from '../shared/outputs';
import type { NodeOperation } from '../shared/router';
import { LIMITS, numberRange, rangeText } from '../shared/limits';

/** The outputs' display names after Unrecorded. */
export const OUTPUT_NAMES = outputLabels(GUARDED_OUTPUTS, GUARDED_OUTPUT_LABELS);
/** Output index per result, after Unrecorded (index 0). */
const OUT = Object.fromEntries(GUARDED_OUTPUTS.map((o, i) => [o, i + 1])) as Record<GuardedOutput, number>;

/** The credential types Authentication offers (n8n's generic HTTP credentials). */
const AUTH_TYPES = ['httpBasicAuth', 'httpBearerAuth', 'httpHeaderAuth', 'httpQueryAuth', 'oAuth2Api'] as const;

const nameValues = (name: string, displayName: string, show: Record<string, Array<string | boolean>>, placeholder: string): INodeProperties => ({
	displayName,
	name,
	type: 'fixedCollection',
	typeOptions: { multipleValues: true },
	placeholder,
	default: {},
	displayOptions: { show },
	options: [
		{
			displayName: 'Parameter',
			name: 'parameters',
			values: [
				{ displayName: 'Name', name: 'name', type: 'string', default: '' },
				{ displayName: 'Value', name: 'value', type: 'string', default: '' },
			],
		},
	],
});

const description: INodeProperties[] = [
	{
		displayName:
			'Reserves the operation key, sends the request with the ledger\'s idempotency key as a header, and records the answer, <b>all in this node</b>: ' +
			'a retry, a resent webhook or a re-run in the editor meets the reservation and never sends it again. ' +
			'Timeouts, resets and 5xx answers come out of <b>Unknown</b>: settle them with the reconcile workflow (Reconcile Unknown), never with n8n\'s Retry.',
		name: 'notice',
		type: 'notice',
		default: '',
	},
	...operationKeyProperties,
	{
		displayName: 'Method',
		name: 'method',
		type: 'options',
		options: GUARDED_METHODS.map((m) => ({ name: m, value: m })),
		default: 'POST',
	},
	{
		displayName: 'URL',
		name: 'url',
		type: 'string',
		default: '',
		required: true,
		placeholder: 'e.g. https://api.example.com/v1/payments',
		description: 'Absolute http(s) URL. Put user names, passwords and tokens in a credential (Authentication), not here.',
	},
	{
		displayName: 'Authentication',
		name: 'authentication',
		type: 'options',
		options: [
			{ name: 'Basic Auth', value: 'httpBasicAuth' },
			{ name: 'Bearer Auth', value: 'httpBearerAuth' },
			{ name: 'Header Auth', value: 'httpHeaderAuth' },
			{ name: 'None', value: 'none' },
			{ name: 'OAuth2', value: 'oAuth2Api' },
			{ name: 'Query Auth', value: 'httpQueryAuth' },
		],
		default: 'none',
		description: "One of n8n's own HTTP credentials, applied by n8n's request helper",
	},
	{
		displayName: 'Send Query Parameters',
		name: 'sendQuery',
		type: 'boolean',
		default: false,
	},
	nameValues('queryParameters', 'Query Parameters', { sendQuery: [true] }, 'Add Parameter'),
	{
		displayName: 'Send Headers',
		name: 'sendHeaders',
		type: 'boolean',
		default: false,
	},
	nameValues('headerParameters', 'Headers', { sendHeaders: [true] }, 'Add Header'),
	{
		displayName: 'Body',
		name: 'bodyType',
		type: 'options',
		options: [
			{ name: 'Form URL-Encoded', value: 'form' },
			{ name: 'JSON', value: 'json' },
			{ name: 'None', value: 'none' },
			{ name: 'Raw Text', value: 'text' },
		],
		default: 'json',
	},
	{
		displayName: 'JSON Body',
		name: 'jsonBody',
		type: 'json',
		default: '',
		required: true,
		placeholder: '={{ { customerId: $json.customerId, amount: $json.amount, currency: $json.currency } }}',
		description: 'The body, sent as JSON (unless a Content-Type header says otherwise). Also what the request is fingerprinted by (with the method, URL and query).',
		displayOptions: { show: { bodyType: ['json'] } },
	},
	nameValues('formFields', 'Body Fields', { bodyType: ['form'] }, 'Add Field'),
	{
		displayName: 'Text Body',
		name: 'textBody',
		type: 'string',
		typeOptions: { rows: 4 },
		default: '',
		displayOptions: { show: { bodyType: ['text'] } },
	},
	{
		displayName: 'Content Type',
		name: 'contentType',
		type: 'string',
		default: 'text/plain; charset=utf-8',
		displayOptions: { show: { bodyType: ['text'] } },
	},
	{
		displayName: 'Idempotency Key Header',
		name: 'idempotencyHeader',
		type: 'string',
		default: DEFAULT_IDEMPOTENCY_HEADER,
		description:
			"The header that carries the ledger's downstream idempotency key (new for each attempt), so a target that deduplicates refuses a repeat too. Empty: not sent (only for a target that refuses unknown headers).",
	},
	{
		displayName: 'Timeout (Ms)',
		name: 'timeoutMs',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: MAX_TIMEOUT_MS },
		default: DEFAULT_TIMEOUT_MS,
		required: true,
		description:
			'Longest time the whole request may take, in milliseconds (1 to 600000): connect, send and the complete answer. Past it the node stops waiting and records the operation as Unknown (the request may have arrived). The lease must outlast it by 5 s.',
	},
	{
		displayName: 'Reference Field',
		name: 'referenceField',
		type: 'string',
		default: 'id',
		placeholder: 'e.g. data.payment.ref',
		description: "Where the target's ID for the write is in a JSON answer (dot notation). Stored with the operation and returned to replays. Empty: none.",
	},
	{
		displayName: 'Target',
		name: 'target',
		type: 'string',
		default: '',
		placeholder: 'e.g. payments-api',
		description: "Name of the outside system, stored for Reconcile Unknown's lookups. Empty: the URL's host.",
	},
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.leaseSeconds),
		default: LIMITS.leaseSeconds.default,
		description:
			`How long this execution holds the operation while the request runs, in seconds (${rangeText(LIMITS.leaseSeconds)}); at least the timeout plus 5 s. A lease that ends without a recorded answer (the worker died) makes the operation unknown, never free to send again.`,
	},
	{
		displayName: 'Settle Window (Seconds)',
		name: 'settleSeconds',
		type: 'number',
		typeOptions: numberRange(LIMITS.settleWindowSeconds),
		default: LIMITS.settleWindowSeconds.default,
		description:
			`How long after the operation became unknown the write may still land at the target, in seconds (${rangeText(LIMITS.settleWindowSeconds)}). Reconcile Unknown looks it up only after this window. Choose more than the target takes to finish a request it received.`,
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options: [
			{
				displayName: 'Fingerprint',
				name: 'fingerprint',
				type: 'json',
				default: '',
				description:
					'What tells a repeat of this request from a different one under the same key (SHA-256 over RFC 8785 canonical JSON). Default: the method, URL, query and body; never the headers.',
			},
			{
				displayName: 'Include Response Headers',
				name: 'includeResponseHeaders',
				type: 'boolean',
				default: false,
				description: 'Whether the item carries the answer\'s headers (response.headers). They are never stored in the ledger.',
			},
			{
				displayName: 'Max Stored Response (Bytes)',
				name: 'maxResponseBytes',
				type: 'number',
				typeOptions: { minValue: 2, maxValue: 16777216 },
				default: DEFAULT_MAX_RESPONSE_BYTES,
				description: 'Largest answer stored for replays, in bytes of canonical JSON; a larger one is stored truncated (the reference is always kept)',
			},
			{
				displayName: 'Parallel Requests',
				name: 'concurrency',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 50 },
				default: 5,
				description: 'How many items are reserved, sent and recorded together. Each group is one reservation round trip, its requests at once, one recording round trip.',
			},
			{
				displayName: 'Status Code Overrides',
				name: 'statusOverrides',
				type: 'string',
				default: '',
				placeholder: 'e.g. 409=failed, 402=failed_retryable',
				description:
					'Change how single status codes are read: comma-separated code=verdict pairs, verdict one of succeeded, failed, failed_retryable, unknown. Default table: docs/http-classification.md.',
			},
			{
				displayName: 'Store Response',
				name: 'storeResponse',
				type: 'boolean',
				default: true,
				description: 'Whether to store the answer (status code and body) for replays: Done Before returns it',
			},
		],
	},
];

interface Planned {
	index: number;
	reserve: ReserveItem;
	request: GuardedRequest;
	referenceField: string;
	overrides: StatusOverrides;
	includeHeaders: boolean;
	storeResponse: boolean;
	maxResponseBytes: number;
}

/** Items of one output, built as the loop goes. */
type Outputs = INodeExecutionData[][];

async function execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const outputs: Outputs = emptyOutputs(1 + GUARDED_OUTPUTS.length);
	const authentication = this.getNodeParameter('authentication', 0, 'none') as string;

	// 1. Every item checked before anything is reserved or sent.
	const { prepared, errorItems } = prepareItems(this, items, (i) => {
		const options = this.getNodeParameter('options', i, {}) as IDataObject;
		const leaseSeconds = this.getNodeParameter('leaseSeconds', i);
		const bodyType = this.getNodeParameter('bodyType', i, 'json') as string;
		const fingerprintOption = options.fingerprint;
		const request = prepareGuardedRequest({
			method: this.getNodeParameter('method', i),
			url: this.getNodeParameter('url', i),
			headers: this.getNodeParameter('sendHeaders', i, false) ? this.getNodeParameter('headerParameters.parameters', i, []) : [],
			query: this.getNodeParameter('sendQuery', i, false) ? this.getNodeParameter('queryParameters.parameters', i, []) : [],
			bodyType,
			body: bodyFor(this, i, bodyType),
			contentType: bodyType === 'text' ? this.getNodeParameter('contentType', i, '') : undefined,
			timeoutMs: this.getNodeParameter('timeoutMs', i),
			idempotencyHeader: this.getNodeParameter('idempotencyHeader', i, DEFAULT_IDEMPOTENCY_HEADER),
			leaseSeconds: typeof leaseSeconds === 'number' ? leaseSeconds : Number(leaseSeconds),
			fingerprint:
				fingerprintOption === undefined || fingerprintOption === '' ? undefined : jsonParameter(this, fingerprintOption, 'The fingerprint', i, false),
		});
		const target = (this.getNodeParameter('target', i, '') as string) || new URL(request.url).host;
		const reserve = prepareReserveItem(i, {
			operationKey: operationKeyParameter(this, i),
			request: request.fingerprint,
			target,
			leaseSeconds,
			settleSeconds: this.getNodeParameter('settleSeconds', i, 120),
		});
		return {
			index: i,
			reserve,
			request,
			referenceField: String(this.getNodeParameter('referenceField', i, 'id') ?? '').trim(),
			overrides: parseStatusOverrides(options.statusOverrides) as StatusOverrides,
			includeHeaders: options.includeResponseHeaders === true,
			storeResponse: options.storeResponse !== false,
			maxResponseBytes: Number(options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES),
		} satisfies Planned;
	});
	outputs[UNRECORDED].push(...errorItems);
	if (prepared.length === 0) return outputs;
	const plans = prepared.map((p) => p.value);

	// 2. The credentials: both loaded before anything is reserved, so a missing one reserves nothing.
	let connection: LedgerConnection;
	try {
		if (authentication !== 'none') {
			if (!(AUTH_TYPES as readonly string[]).includes(authentication)) throw new InputError(`Authentication "${cutText(authentication, 40)}" is not offered`);
			await this.getCredentials(authentication);
		}
		connection = await getLedgerConnection(this);
	} catch (e) {
		outputs[UNRECORDED].push(...batchFailure(this, e, 'Guarded HTTP Request', plans.map((p) => p.index)));
		return outputs;
	}

	const concurrency = Math.min(50, Math.max(1, Math.trunc(Number((this.getNodeParameter('options', 0, {}) as IDataObject).concurrency ?? 5)) || 5));
	let done = 0;
	const cancel = this.getExecutionCancelSignal?.();
	for (let start = 0; start < plans.length; start += concurrency) {
		const group = plans.slice(start, start + concurrency);
		if (cancel?.aborted) {
			// n8n's Stop: the items of the groups not started yet are neither reserved nor sent.
			for (const p of plans.slice(start)) outputs[UNRECORDED].push(errorItem(this, 'The execution was cancelled before this item was reserved; nothing was sent', p.index, true));
			break;
		}
		await runGroup(this, connection, items, group, authentication, outputs, done);
		done += group.length;
	}
	return outputs;
}

/** The body parameter for the chosen body type (validated by the core). */
function bodyFor(fns: IExecuteFunctions, i: number, bodyType: string): unknown {
	if (!(BODY_TYPES as readonly string[]).includes(bodyType)) return undefined;
	if (bodyType === 'json') {
		const raw = fns.getNodeParameter('jsonBody', i, '');
		const value = jsonParameter(fns, raw, 'The JSON body', i, false);
		if (value === null || value === undefined) throw new InputError('The JSON body is empty: give the body to send (or choose Body: None)');
		return value;
	}
	if (bodyType === 'form') return fns.getNodeParameter('formFields.parameters', i, []);
	if (bodyType === 'text') return fns.getNodeParameter('textBody', i, '');
	return undefined;
}

/** Reserves, sends and records one group; fills `outputs`. Throws only under On Error: Stop. */
async function runGroup(
	fns: IExecuteFunctions,
	conn: LedgerConnection,
	items: INodeExecutionData[],
	group: Planned[],
	authentication: string,
	outputs: Outputs,
	doneBefore: number,
): Promise<void> {
	const ctx = eventContext(fns);
	const earlier = doneBefore > 0 ? ` ${doneBefore} earlier item(s) of this batch were already decided, sent where they got a lease, and recorded: running the node again answers them from the ledger.` : '';
	let reserved: ReserveResult[];
	try {
		reserved = await reserveOperations(conn.pool, conn.schema, group.map((p) => p.reserve), ctx, conn.bounds);
	} catch (e) {
		try {
			outputs[UNRECORDED].push(...batchFailure(fns, e, 'Guarded HTTP Request (reserve, nothing sent)', group.map((p) => p.index)));
		} catch (thrown) {
			throw withEarlier(fns, thrown, earlier);
		}
		return;
	}

	// A key another transaction kept locked: nothing recorded for it. Under Stop the node throws and
	// emits nothing, so first give back the leases this group was granted (never sent).
	const busy = reserved.filter((r) => r.outcome === 'busy');
	if (busy.length > 0 && !fns.continueOnFail()) {
		const granted = reserved.flatMap((r, n) => (r.outcome === 'proceed' && r.leaseToken ? [{ operationKey: group[n].reserve.operationKey, leaseToken: r.leaseToken }] : []));
		const message = `Guarded HTTP Request could not decide operation key "${cutText(group[reserved.indexOf(busy[0])].reserve.operationKey, 200)}": ${busy[0].reason ?? 'the key is locked by another transaction'}`;
		await releaseUnsent(conn.pool, conn.schema, granted, `Not sent: Guarded HTTP Request stopped before sending (${message})`, ctx, conn.bounds).catch(() => []);
		throw new NodeOperationError(fns.getNode(), message, {
			itemIndex: busy[0].index,
			description: `Nothing was sent for this group of ${group.length} item(s); its leases were given back, so running it again is safe.${earlier}`,
		});
	}

	const toSend: Array<{ plan: Planned; result: ReserveResult }> = [];
	for (let k = 0; k < reserved.length; k++) {
		const r = reserved[k];
		const plan = group[k];
		if (r.outcome === 'busy') {
			outputs[UNRECORDED].push(errorItem(fns, `Guarded HTTP Request could not decide operation key "${cutText(plan.reserve.operationKey, 200)}": ${r.reason}; nothing was sent`, r.index, true));
		} else if (r.outcome === 'proceed') {
			toSend.push({ plan, result: r });
		} else {
			const ledger: IDataObject = {
				operationKey: plan.reserve.operationKey,
				outcome: r.outcome,
				sent: false,
				status: r.status,
				attempt: r.attempt,
				idempotencyKey: r.idempotencyKey,
				externalRef: r.externalRef,
				leaseExpiresAt: r.leaseExpiresAt,
				replay: r.outcome === 'already_succeeded',
				reason: r.reason,
			};
			if (r.repeatOfItem !== null) ledger.repeatOfItem = r.repeatOfItem;
			if (r.outcome === 'already_succeeded') ledger.responseTruncated = r.responseTruncated;
			const next = reserveNextStep(r.outcome, r.status, r.leaseExpiresAt);
			if (next !== null) ledger.nextStep = next;
			const response = r.outcome === 'already_succeeded' ? (r.response ?? null) : null;
			outputs[OUT[r.outcome]].push(itemOut(items[r.index], response, ledger, r.index));
		}
	}
	if (toSend.length === 0) return;

	// Sent at once, each under its own deadline; a send never rejects (its outcome is data).
	const cancel = fns.getExecutionCancelSignal?.();
	const sent = await Promise.all(toSend.map(({ plan, result }) => (cancel?.aborted ? Promise.resolve(null) : send(fns, plan.request, result.idempotencyKey ?? '', authentication))));

	// Cancelled before sending: give those leases back (failed, retryable: certainly not sent).
	const unsent = toSend.filter((_, n) => sent[n] === null);
	if (unsent.length > 0) {
		await releaseUnsent(
			conn.pool,
			conn.schema,
			unsent.map(({ plan, result }) => ({ operationKey: plan.reserve.operationKey, leaseToken: result.leaseToken as string })),
			'Not sent: the execution was cancelled before the request was sent',
			ctx,
			conn.bounds,
		).catch(() => []);
		for (const { plan } of unsent) outputs[UNRECORDED].push(errorItem(fns, `The execution was cancelled before the request for "${cutText(plan.reserve.operationKey, 200)}" was sent; nothing was sent`, plan.index, true));
	}

	const records: Array<{ plan: Planned; result: ReserveResult; outcome: SendOutcome; confirm: ConfirmItem; verdict: ReturnType<typeof classifySend> }> = [];
	toSend.forEach(({ plan, result }, n) => {
		const outcome = sent[n];
		if (outcome === null) return;
		const verdict = classifySend(outcome, plan.overrides);
		records.push({ plan, result, outcome, verdict, confirm: confirmItemFor(plan, result, verdict) });
	});
	if (records.length === 0) return;

	let confirmed: ConfirmResultRow[];
	try {
		confirmed = await confirmOperations(conn.pool, conn.schema, records.map((r) => r.confirm), ctx, conn.bounds);
	} catch (e) {
		// A connection lost during the COMMIT (OutcomeUnknownError): the answers may have been recorded.
		const maybe = e instanceof OutcomeUnknownError;
		notRecorded(fns, records, `${maybe ? 'the database connection was lost during the COMMIT, so they may have been recorded, or not: ' : ''}${scrubSecrets(String((e as Error)?.message ?? e))}`, outputs, earlier);
		return;
	}
	const stuck: typeof records = [];
	confirmed.forEach((c, n) => {
		const rec = records[n];
		if (c.result === 'not_found' || c.result === 'busy') {
			stuck.push(rec);
			return;
		}
		const stale = c.result === 'stale';
		const ledger: IDataObject = {
			operationKey: rec.plan.reserve.operationKey,
			outcome: stale ? 'stale' : rec.verdict.outcome,
			sent: true,
			status: c.status,
			attempt: c.attempt,
			idempotencyKey: rec.result.idempotencyKey,
			externalRef: c.externalRef,
			statusCode: rec.verdict.statusCode,
			reason: rec.verdict.reason,
			retryable: rec.verdict.outcome === 'failed' ? rec.verdict.retryable : null,
			replay: false,
			late: c.late,
			stale,
			possibleDuplicate: c.possibleDuplicate,
			responseTruncated: rec.confirm.responseTruncated,
		};
		const next = recordedNextStep(c.status, rec.verdict.outcome === 'failed' ? rec.verdict.retryable : null, stale);
		if (next !== null) ledger.nextStep = next;
		const out = stale || c.status === 'review' ? OUT.review : c.status === 'succeeded' ? OUT.succeeded : c.status === 'failed' ? OUT.failed : OUT.unknown;
		outputs[out].push(itemOut(items[rec.plan.index], responseOf(rec.outcome, rec.plan.includeHeaders), ledger, rec.plan.index));
	});
	if (stuck.length > 0) notRecorded(fns, stuck, 'the operation stayed locked by another transaction beyond the lock timeout, or was deleted meanwhile', outputs, earlier);
}

/** The confirmation for one answer; an answer that cannot be stored is recorded as unknown rather than lost. */
function confirmItemFor(plan: Planned, result: ReserveResult, verdict: ReturnType<typeof classifySend>): ConfirmItem {
	const stored = plan.storeResponse && verdict.outcome === 'succeeded' ? { statusCode: verdict.statusCode, body: verdict.body ?? null } : null;
	const base = {
		operationKey: plan.reserve.operationKey,
		leaseToken: result.leaseToken,
		outcome: verdict.outcome,
		externalRef: verdict.outcome === 'succeeded' ? referenceAt(verdict.body, plan.referenceField) : null,
		reason: verdict.reason,
		retryable: verdict.retryable,
		maxResponseBytes: plan.maxResponseBytes,
		oversize: 'truncate' as const,
	};
	try {
		return prepareConfirmItem(plan.index, { ...base, response: stored });
	} catch (e) {
		// The write happened (or may have): keep its outcome, drop only what cannot be stored.
		return prepareConfirmItem(plan.index, { ...base, response: null, reason: base.reason ?? `The answer could not be stored: ${(e as Error).message}` });
	}
}

/** Sends one request; resolves to what came back, never rejects. */
async function send(fns: IExecuteFunctions, req: GuardedRequest, idempotencyKey: string, authentication: string): Promise<SendOutcome> {
	const headers: Record<string, string> = { ...req.headers };
	if (req.idempotencyHeader) headers[req.idempotencyHeader] = idempotencyKey;
	const hasContentType = Object.keys(headers).some((h) => h.toLowerCase() === 'content-type');
	let body: IHttpRequestOptions['body'];
	if (req.bodyType === 'json') {
		if (!hasContentType) headers['Content-Type'] = 'application/json';
		body = JSON.stringify(req.body);
	} else if (req.bodyType === 'form') {
		const params = new URLSearchParams();
		for (const [name, value] of Object.entries(req.body as Record<string, string | string[]>)) for (const v of Array.isArray(value) ? value : [value]) params.append(name, v);
		body = params;
	} else if (req.bodyType === 'text') {
		if (!hasContentType) headers['Content-Type'] = req.contentType ?? 'text/plain; charset=utf-8';
		body = req.body as string;
	}
	const controller = new AbortController();
	const options: IHttpRequestOptions = {
		method: req.method,
		url: req.url,
		headers,
		qs: req.query,
		body,
		encoding: 'text',
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: true,
		// A backstop only: the helper's timeout is the socket's idle time. The bound is the deadline
		// below, which fires first (and ends the request, except through a credential, where n8n puts
		// its own cancel signal in: there this backstop closes the idle socket a second later).
		timeout: req.timeoutMs + 1000,
		abortSignal: controller.signal,
	};
	const cancel = fns.getExecutionCancelSignal?.();
	let timer: NodeJS.Timeout | undefined;
	let onCancel: (() => void) | undefined;
	// The total deadline: the helper's timeout is an idle timeout of the socket, so an answer that
	// trickles in could outlast it; this one ends the wait (and, without a credential, the request).
	const deadline = new Promise<SendOutcome>((resolve) => {
		timer = setTimeout(() => {
			controller.abort();
			resolve({ kind: 'deadline', timeoutMs: req.timeoutMs });
		}, req.timeoutMs);
		onCancel = () => {
			controller.abort();
			resolve({ kind: 'cancelled' });
		};
		cancel?.addEventListener('abort', onCancel, { once: true });
	});
	const call = (async (): Promise<SendOutcome> => {
		try {
			const res = (await (authentication === 'none'
				? fns.helpers.httpRequest(options)
				: fns.helpers.httpRequestWithAuthentication.call(fns, authentication, options))) as { statusCode: number; headers: Record<string, unknown>; body: unknown };
			return { kind: 'answer', statusCode: Number(res.statusCode), headers: res.headers ?? {}, body: parseBody(res.body, res.headers?.['content-type']) };
		} catch (error) {
			return { kind: 'error', error };
		}
	})();
	try {
		return await Promise.race([call, deadline]);
	} finally {
		clearTimeout(timer);
		if (onCancel) cancel?.removeEventListener('abort', onCancel);
	}
}

/** The item's `response`: the answer (status code, body, and headers when asked), or null. */
function responseOf(outcome: SendOutcome, includeHeaders: boolean): IDataObject | null {
	if (outcome.kind !== 'answer') return null;
	const r: IDataObject = { statusCode: outcome.statusCode, body: outcome.body as IDataObject };
	if (includeHeaders) r.headers = outcome.headers as IDataObject;
	return r;
}

function itemOut(input: INodeExecutionData, response: unknown, ledger: IDataObject, index: number): INodeExecutionData {
	const { ledger: _earlier, ...json } = input.json;
	void _earlier;
	return { json: { ...json, response: response as IDataObject, ledger }, binary: input.binary, pairedItem: { item: index } };
}

/**
 * Sent, but the answer could not be recorded (the database failed, or the row stayed locked):
 * each operation stays reserved until its lease ends and then becomes unknown, and Reconcile
 * Unknown settles it. Nothing may be sent again meanwhile, and nothing will: a re-run meets the
 * lease (In Progress) or the unknown row (Reconcile). Under Continue: error items on Unrecorded;
 * under Stop: the node throws, naming each item and what the target answered.
 */
function notRecorded(fns: IExecuteFunctions, records: Array<{ plan: Planned; verdict: ReturnType<typeof classifySend> }>, why: string, outputs: Outputs, earlier: string): void {
	const what = (r: { plan: Planned; verdict: ReturnType<typeof classifySend> }) =>
		`item ${r.plan.index} ("${cutText(r.plan.reserve.operationKey, 120)}"): ${r.verdict.statusCode !== null ? `HTTP ${r.verdict.statusCode}` : cutText(r.verdict.reason ?? 'no answer', 200)}`;
	const after =
		'Unless it was recorded after all, the operation stays reserved until its lease ends, then becomes unknown: run the reconcile workflow (Reconcile Unknown) for it. Running this node or execution again does not send it again (it answers Done Before if it was recorded, else In Progress, then Reconcile).';
	if (fns.continueOnFail()) {
		for (const r of records) {
			outputs[UNRECORDED].push(errorItem(fns, `The request was sent but its answer could not be recorded (${why}): ${what(r)}. ${after}`, r.plan.index, false));
		}
		return;
	}
	throw new NodeOperationError(fns.getNode(), `${records.length} request(s) were sent but their answers could not be recorded: ${cutText(why, 500)}`, {
		itemIndex: records[0].plan.index,
		description: `${records.map(what).join('; ')}. ${after}${earlier}`,
	});
}

/** Adds to a thrown batch failure that earlier groups were already sent and recorded. */
function withEarlier(fns: IExecuteFunctions, thrown: unknown, earlier: string): unknown {
	if (!earlier || !(thrown instanceof NodeOperationError)) return thrown;
	return new NodeOperationError(fns.getNode(), thrown.message, { description: `${thrown.description ?? ''}${earlier}` });
}

export const sendOperation: NodeOperation = {
	// Not listed (a map of one has no Operation parameter); named for the router and CONTRIBUTING.md.
	option: { name: 'Send', action: 'Send a guarded HTTP request', description: 'Reserve, send and record an HTTP request in one node' },
	description,
	execute,
};
