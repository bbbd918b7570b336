/**
 * The business request of an input item: what Reserve Operation fingerprints by default
 * (*Request: From the Input Item*). A fingerprint must name what the write does, not how the
 * request reached n8n: the same order sent again with another User-Agent, an X-Request-Id, a query
 * string or through the editor's test URL is the same request (Done Before), a different amount is
 * a different one (Conflict). Rules, tried in this order:
 *
 *   1. An item of n8n's Webhook node, or of a Wait node resumed by a webhook: an object with
 *      `headers` (an object) and `body`, and no field but headers, params, query, body,
 *      webhookUrl, executionMode, jwtPayload (and `ledger`). Its `body` alone: headers, query,
 *      path parameters, the webhook URL (production or test), the execution mode and a JWT's
 *      claims (issued-at, expiry) describe the delivery.
 *   2. An item of n8n's Form Trigger or Form node: `formMode` is "test" or "production" and
 *      `submittedAt` is text. Its fields without submittedAt, formMode and headers (the
 *      submission's time and delivery); formQueryParameters stay (a form may carry business ids
 *      in its query).
 *   3. Anything else: the item's JSON.
 *
 * In every case without `ledger`, the field an earlier Reserve Operation (or Guarded HTTP
 * Request) added: its lease token and attempt differ on every run.
 * Source of the shapes: n8n-nodes-base 2.33 (Webhook node: headers, params, query, body,
 * webhookUrl, executionMode; Form Trigger: the fields, submittedAt, formMode).
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Fields n8n's Webhook node (and a Wait node resumed by a webhook) gives an item. */
const WEBHOOK_FIELDS = new Set(['headers', 'params', 'query', 'body', 'webhookUrl', 'executionMode', 'jwtPayload', 'ledger']);
/** What a Form Trigger adds about the submission itself. */
const FORM_DELIVERY_FIELDS = ['submittedAt', 'formMode', 'headers'];

/** Which rule chose the business request. */
export type BusinessRequestSource = 'webhook body' | 'form fields' | 'item';

/** The business request of `json` (see the rules above) and the rule that chose it. */
export function businessRequest(json: unknown): { request: unknown; source: BusinessRequestSource } {
	if (!isObj(json)) return { request: json, source: 'item' };
	const keys = Object.keys(json);
	if (isObj(json.headers) && 'body' in json && keys.every((k) => WEBHOOK_FIELDS.has(k))) {
		return { request: json.body === undefined ? null : json.body, source: 'webhook body' };
	}
	const { ledger: _ledger, ...rest } = json;
	void _ledger;
	if ((json.formMode === 'test' || json.formMode === 'production') && typeof json.submittedAt === 'string') {
		for (const k of FORM_DELIVERY_FIELDS) delete rest[k];
		return { request: rest, source: 'form fields' };
	}
	return { request: rest, source: 'item' };
}
