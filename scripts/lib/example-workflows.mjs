// The shipped example workflows (workflows/*.json), adapted only where a run outside the editor must
// be: the provider's URL, a trigger a script can fire, shorter timings. Shared by `npm run demo` and
// the e2e tests (test/e2e/crash-window.test.ts), so both run the workflows a user imports.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './embedded-pg.mjs';

/** The parsed workflows/<file> (a fresh copy on each call, free to change). */
export function readWorkflow(file) {
	return JSON.parse(readFileSync(path.join(repoRoot, 'workflows', file), 'utf8'));
}

/** Renames node `from` of `wf` to `to`, in its connections too (from both ends). */
export function renameNode(wf, from, to) {
	wf.nodes.find((n) => n.name === from).name = to;
	if (wf.connections[from]) {
		wf.connections[to] = wf.connections[from];
		delete wf.connections[from];
	}
	for (const src of Object.values(wf.connections)) {
		for (const outs of src.main) for (const c of outs ?? []) if (c.node === from) c.node = to;
	}
}

/** The Guarded HTTP Request node of the payment workflow (Charge Payment). */
const chargeNode = (wf) => wf.nodes.find((n) => n.type.endsWith('.guardedHttpRequest'));

/**
 * workflows/idempotent-payment.json as shipped (Manual Trigger, workflow id "idempotent-payment"),
 * charging `${apiUrl}/payments`, with the Business Input fields in `input` ({ orderId, customerId,
 * amount, currency }; each one given replaces the example's value).
 */
export function manualPaymentWorkflow(apiUrl, input = {}) {
	const wf = readWorkflow('idempotent-payment.json');
	chargeNode(wf).parameters.url = `${apiUrl}/payments`;
	const assignments = wf.nodes.find((n) => n.name === 'Business Input').parameters.assignments.assignments;
	for (const [name, value] of Object.entries(input)) assignments.find((a) => a.name === name).value = value;
	return wf;
}

/**
 * workflows/idempotent-payment.json with a Webhook "Payment Request" (POST /webhook/<webhookPath>,
 * answered as soon as it is received) instead of the Manual Trigger; Business Input reads the
 * order from the request body ({ orderId, customerId, amount, currency }). Options: `id` (the
 * workflow id, also its name's suffix), `webhookPath`, and for Charge Payment `leaseSeconds`,
 * `settleSeconds` (seconds) and `timeoutMs` (milliseconds); those not given keep the example's.
 */
export function webhookPaymentWorkflow(apiUrl, { id, webhookPath, leaseSeconds, settleSeconds, timeoutMs }) {
	const wf = readWorkflow('idempotent-payment.json');
	wf.id = id;
	wf.name = `Idempotent payment (webhook): ${id}`;
	const trigger = wf.nodes.find((n) => n.type === 'n8n-nodes-base.manualTrigger');
	renameNode(wf, trigger.name, 'Payment Request');
	Object.assign(trigger, {
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2,
		webhookId: randomUUID(),
		parameters: { httpMethod: 'POST', path: webhookPath, responseMode: 'onReceived', options: {} },
	});
	const input = wf.nodes.find((n) => n.name === 'Business Input');
	for (const a of input.parameters.assignments.assignments) a.value = `={{ $json.body.${a.name} }}`;
	const charge = chargeNode(wf);
	charge.parameters.url = `${apiUrl}/payments`;
	if (leaseSeconds !== undefined) charge.parameters.leaseSeconds = leaseSeconds;
	if (settleSeconds !== undefined) charge.parameters.settleSeconds = settleSeconds;
	if (timeoutMs !== undefined) charge.parameters.timeoutMs = timeoutMs;
	return wf;
}

/**
 * workflows/reconcile-payments.json (workflow id "reconcile-payments", run by its Manual Trigger
 * "Run Now") looking payments up at `${apiUrl}/payments`, with no extra settle delay on the claim
 * (each operation carries its own settle window) and a claim of `claimSeconds` (default 60).
 */
export function reconcileWorkflow(apiUrl, { claimSeconds = 60 } = {}) {
	const wf = readWorkflow('reconcile-payments.json');
	const claim = wf.nodes.find((n) => n.parameters?.operation === 'claim');
	claim.parameters.settleSeconds = 0;
	claim.parameters.claimSeconds = claimSeconds;
	wf.nodes.find((n) => n.name === 'Look Up Payment').parameters.url = `${apiUrl}/payments`;
	return wf;
}
