/**
 * The flagship example end to end (issue 5): "agent proposes, policy decides, ledger writes", in a
 * real n8n with n8n's own AI Agent, OpenAI Chat Model and Structured Output Parser nodes.
 *
 * The model is a real local HTTP server speaking the OpenAI Chat Completions API
 * (test/helpers/fakeOpenAi.ts); the `openAiApi` credential's Base URL points at it and it replays
 * scripted answers. The refunds provider and the approver's inbox are another real local server
 * (test/helpers/fakeRefundsApi.ts). The package is packed and installed the way the Community
 * Nodes UI installs it; workflows/agent-policy-ledger.json and workflows/agent-approval.json are
 * imported and published unchanged except for the two outside URLs.
 *
 * Asserted, counting writes at the provider and reading the ledger table directly:
 *   1. a low-risk proposal is written exactly once;
 *   2. the same proposal twice in one answer, and again in a later message, is written once; the
 *      repeats are answered from the ledger (Done Before) with the stored refund;
 *   3. two different proposals in one answer are two operations with two keys, never merged;
 *   4. proposals over the hard limit, for another customer or with a forbidden action never reach
 *      Reserve or the provider;
 *   5. a high-risk proposal waits for a human, decided only by a POST of the approval form: a bot
 *      GETting the approval link and the old-style approve/reject links decides nothing; reject →
 *      nothing written (a later approve submission changes nothing); approve → written once, a
 *      second submission changes nothing; two submissions at once → written once.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startFakeOpenAi, FINAL_RESPONSE_TOOL, type FakeOpenAi } from '../helpers/fakeOpenAi';
import { startFakeRefundsApi, type FakeRefundsApi } from '../helpers/fakeRefundsApi';
import { harness, type Json, type N8nInstance } from '../helpers/n8nHarness';
import { waitFor } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '../..');
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const MAIN_ID = 'agent-policy-ledger';
const APPROVAL_ID = 'agent-approval';

const log = (m: string) => process.stdout.write(`[agent] ${m}\n`);
const readWorkflow = (file: string): Json => JSON.parse(readFileSync(path.join(ROOT, 'workflows', file), 'utf8'));

/** The shipped workflows with only their outside URLs pointed at the local provider. */
function workflowsFor(providerUrl: string): Json[] {
	const main = readWorkflow('agent-policy-ledger.json');
	const approval = readWorkflow('agent-approval.json');
	for (const wf of [main, approval]) {
		const issue = wf.nodes.find((n: Json) => n.name === 'Issue Refund');
		expect(issue?.parameters.url).toMatch(/\/refunds$/);
		issue.parameters.url = `${providerUrl}/refunds`;
	}
	const notify = approval.nodes.find((n: Json) => n.name === 'Notify Approver');
	notify.parameters.url = `${providerUrl}/notifications`;
	return [approval, main];
}

const proposal = (customerId: string, amount: number, extra: Json = {}) => ({
	action: 'refund',
	customerId,
	amount,
	currency: 'EUR',
	reason: 'The parcel arrived damaged.',
	...extra,
});

describe('agent proposes, policy decides, ledger writes (real n8n, real AI Agent node)', () => {
	let model: FakeOpenAi;
	let provider: FakeRefundsApi;
	let n8n: N8nInstance;
	let pg: Client;
	let n8nDb: Client;
	const schema = `agent_${randomBytes(5).toString('hex')}`;
	const tag = randomBytes(3).toString('hex');
	const customer = (name: string) => `cus_${name}_${tag}`;

	beforeAll(async () => {
		model = await startFakeOpenAi();
		provider = await startFakeRefundsApi();
		pg = new Client({ connectionString: DATABASE_URL });
		await pg.connect();
		let t = Date.now();
		const tarball = await harness.packPackage();
		n8n = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, tarball });
		log(`packed and installed in ${Date.now() - t} ms`);
		t = Date.now();
		await n8n.importCredentials([
			{
				id: 'ledger-pg',
				name: 'Operation Ledger Postgres account',
				type: 'operationLedgerPostgresApi',
				data: { connectionType: 'connectionString', connectionString: DATABASE_URL, ssl: 'disable', schema, autoApplySchema: true, maxConnections: 5 },
			},
			{
				id: 'openai-api',
				name: 'OpenAI',
				type: 'openAiApi',
				data: { apiKey: 'sk-fake-test-key', url: model.baseUrl, header: false },
			},
		]);
		for (const wf of workflowsFor(provider.url)) await n8n.importWorkflow(wf);
		for (const id of [APPROVAL_ID, MAIN_ID]) await n8n.publishWorkflow(id);
		await n8n.start();
		// n8n answers /healthz before it has activated every published workflow: wait until it
		// serves the agent workflow's webhook.
		await n8n.waitForWebhooks([{ path: 'agent-refund' }]);
		n8nDb = new Client({ connectionString: n8n.database.url });
		await n8nDb.connect();
		log(`imported, published and started in ${Date.now() - t} ms; n8n at ${n8n.url}, ledger schema ${schema}`);
	}, 15 * 60_000);

	afterAll(async () => {
		await n8nDb?.end().catch(() => undefined);
		await n8n?.cleanup().catch(() => undefined);
		await pg?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
		await pg?.end().catch(() => undefined);
		await model?.close();
		await provider?.close();
	}, 5 * 60_000);

	// --- helpers ---

	/** Scripts the model's answer, sends the customer's request, returns n8n's answer. */
	async function ask(customerId: string, orderId: string, proposals: Json[], message = 'Please refund me.'): Promise<Json> {
		expect(model.pending()).toBe(0);
		model.script({ proposals });
		const t = Date.now();
		const res = await fetch(`${n8n.url}/webhook/agent-refund`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ customerId, orderId, message }),
		});
		const text = await res.text();
		if (res.status !== 200) throw new Error(`webhook answered ${res.status}: ${text}\n${n8n.logTail(60)}`);
		const answer = JSON.parse(text);
		log(`${customerId} ${orderId}: ${proposals.length} proposal(s) → ${answer.results.map((r: Json) => r.result).join(', ')} in ${Date.now() - t} ms`);
		expect(model.pending()).toBe(0);
		return answer;
	}

	const refundsOf = (customerId: string) => provider.refunds().filter((r) => r.customerId === customerId);
	const postsOf = (customerId: string) => provider.requests().filter((r) => r.path === '/refunds' && r.method === 'POST' && r.body?.customerId === customerId);

	async function ledgerRows(customerId: string) {
		try {
			const { rows } = await pg.query(
				`SELECT operation_key, status, attempt, external_ref, idempotency_key FROM "${schema}".operations WHERE operation_key LIKE $1 ORDER BY operation_key`,
				[`refund:issue:${customerId}/%`],
			);
			return rows;
		} catch (e) {
			// No Reserve has run yet in this n8n (the schema is applied on first use): no rows.
			if ((e as { code?: string }).code === '42P01' || (e as { code?: string }).code === '3F000') return [];
			throw e;
		}
	}

	const keyOf = (customerId: string, orderId: string, amount: string) => `refund:issue:${customerId}/${orderId}/${amount}/EUR:v1`;

	async function finishedApprovals(): Promise<number> {
		const { rows } = await n8nDb.query(
			`SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1 AND status NOT IN ('new', 'running', 'waiting')`,
			[APPROVAL_ID],
		);
		return rows[0].n;
	}

	async function approvalStatuses(): Promise<Record<string, number>> {
		const { rows } = await n8nDb.query(`SELECT status, count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1 GROUP BY status`, [APPROVAL_ID]);
		return Object.fromEntries(rows.map((r) => [r.status, r.n]));
	}

	/** The approval request the sub-workflow posted to the approver's inbox for this customer. */
	const approvalFor = (customerId: string) =>
		waitFor(async () => provider.notifications().find((m) => m?.proposal?.customerId === customerId), { what: `the approval request for ${customerId}`, timeoutMs: 60_000, intervalMs: 200 });

	/** Waits until the approval execution of this customer is parked in its Wait node. */
	async function waitingApproval(customerId: string): Promise<Json> {
		const note = await approvalFor(customerId);
		const executionId = new URL(note.approvalUrl).pathname.split('/').filter(Boolean).pop();
		await waitFor(async () => {
			const { rows } = await n8nDb.query(`SELECT status FROM execution_entity WHERE id = $1`, [executionId]);
			return rows[0]?.status === 'waiting';
		}, { what: `approval execution ${executionId} to wait`, timeoutMs: 60_000, intervalMs: 200 });
		return { ...note, executionId };
	}

	async function executionFinished(executionId: string) {
		return waitFor(async () => {
			const { rows } = await n8nDb.query(`SELECT status FROM execution_entity WHERE id = $1`, [executionId]);
			return rows[0] && !['new', 'running', 'waiting'].includes(rows[0].status) ? rows[0].status : false;
		}, { what: `approval execution ${executionId} to finish`, timeoutMs: 60_000, intervalMs: 200 });
	}

	/** The approver's form submission: a multipart POST of the Decision field, as the form page sends it. */
	async function submitDecision(approvalUrl: string, decision: 'Approve' | 'Reject'): Promise<number> {
		const body = new FormData();
		body.append('field-0', decision);
		const r = await fetch(approvalUrl, { method: 'POST', body });
		await r.arrayBuffer();
		return r.status;
	}

	/** What a link preview or mail scanner does: GET every link it can find, read the page. */
	async function botOpens(urls: string[]): Promise<number[]> {
		const statuses: number[] = [];
		for (const url of urls) {
			const r = await fetch(url, { headers: { 'user-agent': 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)' } });
			await r.arrayBuffer();
			statuses.push(r.status);
		}
		return statuses;
	}

	/** The approval link, plus the approve/reject links the old workflow sent (resume URL + ?decision=). */
	function linksABotMightOpen(approvalUrl: string): string[] {
		const withQuery = (u: string, q: string) => u + (u.includes('?') ? '&' : '?') + q;
		const webhookStyle = approvalUrl.replace('/form-waiting/', '/webhook-waiting/');
		return [
			approvalUrl,
			withQuery(approvalUrl, 'decision=approve'),
			withQuery(approvalUrl, 'decision=reject'),
			withQuery(webhookStyle, 'decision=approve'),
			withQuery(webhookStyle, 'decision=reject'),
		];
	}

	/**
	 * The positive barrier before proving an absence: a later approval (a marker customer's, high
	 * risk) is asked for, parked, rejected by form and finished. Whatever an earlier submission or
	 * link opening would have set off in n8n has had its turn by then; the marker itself finishes one
	 * approval execution and writes nothing.
	 */
	let markers = 0;
	async function laterApprovalHandled(): Promise<void> {
		const m = customer(`marker${++markers}`);
		await ask(m, `ord-marker-${markers}`, [proposal(m, 120)]);
		const note = await waitingApproval(m);
		expect(await submitDecision(note.approvalUrl, 'Reject')).toBe(200);
		expect(await executionFinished(note.executionId)).toBe('success');
		expect(postsOf(m)).toHaveLength(0);
	}

	async function executionStatus(executionId: string): Promise<string | undefined> {
		const { rows } = await n8nDb.query(`SELECT status FROM execution_entity WHERE id = $1`, [executionId]);
		return rows[0]?.status;
	}

	// --- the cases ---

	test('the model is the real OpenAI Chat Model node talking to the local server, offered only the output-format tool', async () => {
		const c = customer('probe');
		const answer = await ask(c, 'ord-probe', [proposal(c, 5)]);
		expect(answer.results).toHaveLength(1);
		const req = model.chatRequests().at(-1)!;
		expect(req.authorization).toBe('Bearer sk-fake-test-key');
		expect(req.body.model).toBe('gpt-4.1-mini');
		// No write tools: the only tool the agent offers the model is the structured-output formatter.
		expect((req.body.tools ?? []).map((t: Json) => t.function?.name)).toEqual([FINAL_RESPONSE_TOOL]);
		const userText = JSON.stringify(req.body.messages);
		expect(userText).toContain(`Customer ${c} writes about order ord-probe`);
	}, 120_000);

	test('1. a plain low-risk proposal is written exactly once', async () => {
		const c = customer('plain');
		const answer = await ask(c, 'ord-1', [proposal(c, 25)]);
		expect(answer).toMatchObject({ customerId: c, orderId: 'ord-1' });
		expect(answer.results).toEqual([
			expect.objectContaining({ result: 'written', customerId: c, amount: 25, currency: 'EUR', operationKey: keyOf(c, 'ord-1', '25.00') }),
		]);
		const refunds = refundsOf(c);
		expect(refunds).toHaveLength(1);
		expect(postsOf(c)).toHaveLength(1);
		expect(answer.results[0].reference).toBe(refunds[0].id);
		const rows = await ledgerRows(c);
		expect(rows).toEqual([
			{ operation_key: keyOf(c, 'ord-1', '25.00'), status: 'succeeded', attempt: 1, external_ref: refunds[0].id, idempotency_key: refunds[0].idempotencyKey },
		]);
	}, 120_000);

	test('2. the same proposal twice in one answer, and again in a later message: one write, repeats answered from the ledger', async () => {
		const c = customer('twice');
		const first = await ask(c, 'ord-2', [proposal(c, 30), proposal(c, 30, { reason: 'Asked again, worded differently.' })]);
		expect(first.results.map((r: Json) => r.result)).toEqual(['written', 'already_done']);
		const [written, repeat] = first.results;
		expect(repeat.operationKey).toBe(written.operationKey);
		expect(repeat.reference).toBe(written.reference);
		// The stored result from the ledger: the provider's response to the one write.
		expect(repeat.stored).toMatchObject({ id: written.reference, amount: 30, currency: 'EUR', customerId: c });

		// The customer writes again; the agent proposes the same refund (30 and 30.0 are one amount).
		const again = await ask(c, 'ord-2', [proposal(c, 30.0, { reason: 'Customer insists.' })], 'Where is my refund?');
		expect(again.results).toEqual([expect.objectContaining({ result: 'already_done', reference: written.reference, operationKey: written.operationKey })]);

		expect(refundsOf(c)).toHaveLength(1);
		expect(postsOf(c)).toHaveLength(1);
		const rows = await ledgerRows(c);
		expect(rows).toHaveLength(1);
		expect(rows[0]).toMatchObject({ operation_key: keyOf(c, 'ord-2', '30.00'), status: 'succeeded', attempt: 1, external_ref: written.reference });
		const events = await pg.query(`SELECT event FROM "${schema}".operation_events WHERE operation_key = $1 ORDER BY event_id`, [rows[0].operation_key]);
		expect(events.rows.map((e) => e.event)).toEqual(['reserved', 'confirmed_succeeded']);
	}, 180_000);

	test('3. two different proposals in one answer are two operations with two keys, never merged', async () => {
		const c = customer('two');
		const answer = await ask(c, 'ord-3', [proposal(c, 20), proposal(c, 35)]);
		expect(answer.results.map((r: Json) => [r.result, r.amount])).toEqual([
			['written', 20],
			['written', 35],
		]);
		expect(answer.results[0].operationKey).toBe(keyOf(c, 'ord-3', '20.00'));
		expect(answer.results[1].operationKey).toBe(keyOf(c, 'ord-3', '35.00'));
		expect(answer.results[0].reference).not.toBe(answer.results[1].reference);
		const refunds = refundsOf(c);
		expect(refunds.map((r) => r.amount).sort((a, b) => a - b)).toEqual([20, 35]);
		expect(new Set(refunds.map((r) => r.idempotencyKey)).size).toBe(2);
		const rows = await ledgerRows(c);
		expect(rows.map((r) => [r.operation_key, r.status])).toEqual([
			[keyOf(c, 'ord-3', '20.00'), 'succeeded'],
			[keyOf(c, 'ord-3', '35.00'), 'succeeded'],
		]);
	}, 120_000);

	test('4. proposals over the hard limit, for another customer or with a forbidden action never reach Reserve or the provider', async () => {
		const c = customer('limit');
		const victim = customer('victim');
		const answer = await ask(c, 'ord-4', [
			proposal(c, 5000),
			proposal(victim, 10),
			proposal(c, 10, { action: 'delete_account' }),
			proposal(c, 10, { currency: 'BTC' }),
		]);
		expect(answer.results.map((r: Json) => r.result)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
		expect(answer.results[0].detail).toMatch(/hard limit/);
		expect(answer.results[1].detail).toMatch(/not the requesting customer/);
		expect(answer.results[2].detail).toMatch(/not allowed/);
		expect(answer.results[3].detail).toMatch(/currency BTC is not allowed/);
		for (const who of [c, victim]) {
			expect(postsOf(who)).toHaveLength(0);
			expect(await ledgerRows(who)).toEqual([]);
		}
		const events = await pg.query(`SELECT count(*)::int AS n FROM "${schema}".operation_events WHERE operation_key LIKE $1 OR operation_key LIKE $2`, [
			`%${c}%`,
			`%${victim}%`,
		]);
		expect(events.rows[0].n).toBe(0);
	}, 120_000);

	test('5a. a high-risk proposal waits for a human; rejected by form → nothing written, a later approve submission changes nothing', async () => {
		const c = customer('reject');
		const finishedBefore = await finishedApprovals();
		const answer = await ask(c, 'ord-5a', [proposal(c, 120)]);
		expect(answer.results).toEqual([expect.objectContaining({ result: 'pending_approval', amount: 120 })]);
		const note = await waitingApproval(c);
		expect(note.text).toContain('120.00 EUR');
		expect(note.approveUrl).toBeUndefined();
		expect(note.rejectUrl).toBeUndefined();

		expect(await submitDecision(note.approvalUrl, 'Reject')).toBe(200);
		expect(await executionFinished(note.executionId)).toBe('success');
		expect(await finishedApprovals()).toBe(finishedBefore + 1);

		// The first decision wins: approving afterwards changes nothing (n8n answers with a page
		// saying the form is no longer available) and writes nothing.
		const late = await submitDecision(note.approvalUrl, 'Approve');
		log(`an approve submission after the rejection answered ${late}`);
		await laterApprovalHandled();
		expect(await finishedApprovals()).toBe(finishedBefore + 2); // this one and the marker's
		expect(postsOf(c)).toHaveLength(0);
		expect(await ledgerRows(c)).toEqual([]);
	}, 180_000);

	test('5b. a bot GETs every link first → nothing decided; then the approver\'s POST decides, once', async () => {
		const c = customer('approve');
		const answer = await ask(c, 'ord-5b', [proposal(c, 150)]);
		expect(answer.results.map((r: Json) => r.result)).toEqual(['pending_approval']);
		const note = await waitingApproval(c);
		const bot = await botOpens(linksABotMightOpen(note.approvalUrl));
		log(`bot GETs of the approval link and the old-style links answered ${bot.join(', ')}`);
		// The approval link itself shows the form (200) and decides nothing.
		expect(bot[0]).toBe(200);
		await laterApprovalHandled();
		expect(await executionStatus(note.executionId)).toBe('waiting');
		expect(postsOf(c)).toHaveLength(0);
		expect(await ledgerRows(c)).toEqual([]);

		expect(await submitDecision(note.approvalUrl, 'Approve')).toBe(200);
		expect(await executionFinished(note.executionId)).toBe('success');
		const refunds = refundsOf(c);
		expect(refunds).toHaveLength(1);
		expect(refunds[0]).toMatchObject({ amount: 150, currency: 'EUR', orderId: 'ord-5b' });
		expect(await ledgerRows(c)).toEqual([
			expect.objectContaining({ operation_key: keyOf(c, 'ord-5b', '150.00'), status: 'succeeded', external_ref: refunds[0].id }),
		]);
		// Once: a second submission, and the bot again, change nothing.
		const finished = await finishedApprovals();
		const again = await submitDecision(note.approvalUrl, 'Approve');
		log(`a second approve submission answered ${again}`);
		await botOpens(linksABotMightOpen(note.approvalUrl));
		await laterApprovalHandled();
		expect(await finishedApprovals()).toBe(finished + 1); // the marker's only
		expect(postsOf(c)).toHaveLength(1);
		expect(await ledgerRows(c)).toHaveLength(1);
	}, 180_000);

	test('5c. two approve submissions at the same moment → written once', async () => {
		const c = customer('scanner');
		await ask(c, 'ord-5c', [proposal(c, 180)]);
		const note = await waitingApproval(c);
		const answers = await Promise.all([1, 2].map(() => submitDecision(note.approvalUrl, 'Approve')));
		log(`two simultaneous approve submissions answered ${answers.join(' and ')}`);
		expect(answers).toContain(200);
		expect(await executionFinished(note.executionId)).toBe('success');
		await laterApprovalHandled();
		expect(postsOf(c)).toHaveLength(1);
		expect(refundsOf(c)).toHaveLength(1);
		const rows = await ledgerRows(c);
		expect(rows).toEqual([expect.objectContaining({ operation_key: keyOf(c, 'ord-5c', '180.00'), status: 'succeeded', attempt: 1 })]);
		log(`approval executions by status: ${JSON.stringify(await approvalStatuses())}`);
	}, 180_000);
});
