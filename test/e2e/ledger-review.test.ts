/**
 * workflows/ledger-review.json in a real n8n: a person settles operations in review
 * through n8n's own Form Trigger and Form nodes, driven over HTTP exactly as the browser does
 * (multipart POSTs of field-N values, the form-waiting URL with its signature, the execution-status
 * poll). The package is packed and installed with npm into .n8n/nodes (docs/install.md); the
 * workflow is imported unchanged and its credential connects as the OPERATOR role of
 * schema/security/operator_role.sql (Apply Schema Automatically off), not as a superuser.
 *
 * Asserted, reading the ledger table directly:
 * (The ledger clock is moved only while claiming, to pass each operation's settle window.)
 *   1. the form's second page lists every operation in review;
 *   2. "Happened" with a reference settles one: succeeded, settled_by the person, an event with
 *      who and why, and the next Reserve of that key answers Done Before;
 *   3. a second person deciding the same operation later is refused, and the page names the first;
 *   4. "Did Not Happen" makes the next Reserve proceed as attempt 2;
 *   5. a decision the node refuses as input (Happened without a reference) ends on "Not recorded"
 *      (the node's Unrecorded output, in n8n's real engine) and changes nothing;
 *   6. an empty review queue ends on "Nothing to review".
 */
import { ledgerSchema } from '../../src/db/identifiers';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { prepareReserveItem, reserveOperations } from '../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../src/ledger/confirm';
import { claimUnknown } from '../../src/ledger/reconcile/claim';
import { prepareResolveItem, resolveUnknown } from '../../src/ledger/reconcile/resolve';
import { setLedgerClock } from '../helpers/db';
import { harness, type Json, type N8nInstance } from '../helpers/n8nHarness';
import { waitFor } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '../..');
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const log = (m: string) => process.stdout.write(`[review] ${m}\n`);
const workflow = (): Json => JSON.parse(readFileSync(path.join(ROOT, 'workflows', 'ledger-review.json'), 'utf8'));

describe('ledger review: a person settles operations in review through n8n forms (real n8n)', () => {
	let n8n: N8nInstance;
	let admin: Pool;
	const schema = `review_${randomBytes(5).toString('hex')}`;
	const role = `${schema}_operator`;
	const q = `"${schema}"`;
	const tag = randomBytes(3).toString('hex');
	const key = (n: number) => `payment:charge:order-${tag}-${n}:v1`;

	/** An operation that reconciliation gave up on: reserved, unknown, then review after 1 check. */
	async function makeReview(k: string) {
		const [r] = await reserveOperations(admin, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: k, request: { k }, leaseSeconds: 60, target: 'payments-api' })]);
		await confirmOperations(admin, ledgerSchema(schema), [prepareConfirmItem(0, { operationKey: k, leaseToken: r.leaseToken, outcome: 'unknown', reason: 'HTTP 504' })]);
		// Past the operation's settle window (moving the ledger clock for the claim only).
		await setLedgerClock(admin, schema, 600);
		const [c] = await claimUnknown(admin, ledgerSchema(schema), { limit: 1, settleSeconds: 0, claimSeconds: 3600, target: 'payments-api' }).finally(() => setLedgerClock(admin, schema, 0));
		expect(c.operationKey).toBe(k);
		const [res] = await resolveUnknown(
			admin,
			ledgerSchema(schema),
			[prepareResolveItem(0, { operationKey: k, claimToken: c.claimToken, resolution: 'still_unknown', reason: 'lookup answered HTTP 500' })],
			{ maxChecks: 1, backoffBaseSeconds: 1, backoffMaxSeconds: 1 },
		);
		expect(res.result).toBe('review');
		// The claim ran 600 s ahead, past the settle window; outside that moment the clock is real, so
		// the window is put where it would be by then (Settle by Hand's Did Not Happen respects it).
		await admin.query(`UPDATE ${q}.operations SET settle_until = now() - interval '1 second' WHERE operation_key = $1`, [k]);
	}
	const reserveAgain = async (k: string) =>
		(await reserveOperations(admin, ledgerSchema(schema), [prepareReserveItem(0, { operationKey: k, request: { k }, leaseSeconds: 60, target: 'payments-api' })]))[0];
	const row = async (k: string) => (await admin.query(`SELECT * FROM ${q}.operations WHERE operation_key = $1`, [k])).rows[0];

	beforeAll(async () => {
		admin = new Pool({ connectionString: DATABASE_URL, max: 3 });
		await migrate(admin, ledgerSchema(schema), true);
		// The split setup: a NOLOGIN owner first (the operator's functions run as their owner, never
		// as a superuser), then the operator role.
		execFileSync(
			'psql',
			[DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-v', `role=${schema}_nodes`, '-v', 'password=review-nodes-secret', '-v', 'keep_public_temp=1', '-f', 'schema/security/least_privilege_role.sql'],
			{ stdio: 'pipe', cwd: ROOT },
		);
		execFileSync(
			'psql',
			[DATABASE_URL, '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-v', `schema=${schema}`, '-v', `role=${role}`, '-v', 'password=review-op-secret', '-f', 'schema/security/operator_role.sql'],
			{ stdio: 'pipe', cwd: ROOT },
		);
		const operatorUrl = new URL(DATABASE_URL);
		operatorUrl.username = role;
		operatorUrl.password = 'review-op-secret';
		let t = Date.now();
		const tarball = await harness.packPackage();
		n8n = await harness.createN8nInstance({ databaseUrl: DATABASE_URL, tarball });
		log(`packed and installed in ${Date.now() - t} ms`);
		t = Date.now();
		await n8n.importCredentials([
			{
				id: 'ledger-operator-pg',
				name: 'Operation Ledger Postgres (operator)',
				type: 'operationLedgerPostgresApi',
				data: { connectionType: 'connectionString', connectionString: operatorUrl.toString(), ssl: 'disable', schema, autoApplySchema: false, maxConnections: 2 },
			},
		]);
		await n8n.importWorkflow(workflow());
		await n8n.publishWorkflow('ledger-review');
		await n8n.start();
		await n8n.waitForWebhooks([{ path: 'ledger-review', method: 'GET', form: true }]);
		log(`imported, published and started in ${Date.now() - t} ms; n8n at ${n8n.url}, schema ${schema}`);
	}, 15 * 60_000);

	afterAll(async () => {
		await n8n?.cleanup().catch(() => undefined);
		await admin?.query(`DROP SCHEMA IF EXISTS ${q} CASCADE`).catch(() => undefined);
		for (const r of [role, `${schema}_nodes`, `${schema}_owner`]) {
			await admin?.query(`DROP OWNED BY "${r}"`).catch(() => undefined);
			await admin?.query(`DROP ROLE IF EXISTS "${r}"`).catch(() => undefined);
		}
		await admin?.end().catch(() => undefined);
	}, 5 * 60_000);

	const multipart = (values: string[]) => {
		const fd = new FormData();
		values.forEach((v, i) => fd.append(`field-${i}`, v));
		return fd;
	};
	/** The execution status the form page polls: "form-waiting", "success", "running", ... */
	async function status(waitingUrl: string): Promise<string> {
		const u = new URL(waitingUrl);
		u.pathname += '/n8n-execution-status';
		return (await (await fetch(u)).text()).trim();
	}

	/** Page 1 (who), then the page the workflow shows next. Returns the waiting URL and that page's HTML. */
	async function open(reviewer: string): Promise<{ waitingUrl: string; html: string }> {
		const page1 = await fetch(`${n8n.url}/form/ledger-review`);
		expect(page1.status).toBe(200);
		expect(await page1.text()).toContain('Ledger review');
		const res = await fetch(`${n8n.url}/form/ledger-review`, { method: 'POST', body: multipart([reviewer]) });
		const text = await res.text();
		if (res.status !== 200) throw new Error(`form answered ${res.status}: ${text}\n${n8n.logTail(60)}`);
		const waitingUrl = (JSON.parse(text) as { formWaitingUrl: string }).formWaitingUrl;
		expect(waitingUrl).toContain('/form-waiting/');
		const s = await waitFor(async () => {
		const st = await status(waitingUrl);
		return st === 'form-waiting' || st === 'success' || st === 'error' ? st : undefined;
		}, { what: 'the next form page', timeoutMs: 60_000, intervalMs: 200 });
		if (s === 'error') throw new Error(`the execution failed\n${n8n.logTail(80)}`);
		const html = await (await fetch(waitingUrl)).text();
		return { waitingUrl, html };
	}

	/**
	 * Submits the decision page and returns the completion page's HTML. A Form Ending is itself a
	 * form page the execution waits on (status "form-waiting"), so the page is polled until it is no
	 * longer the decision page.
	 */
	async function decide(waitingUrl: string, values: [string, 'Happened' | 'Did Not Happen', string, string]): Promise<string> {
		const res = await fetch(waitingUrl, { method: 'POST', body: multipart(values) });
		if (res.status >= 400) throw new Error(`decision page answered ${res.status}: ${await res.text()}\n${n8n.logTail(60)}`);
		await res.text();
		return waitFor(async () => {
			const st = await status(waitingUrl);
			if (st === 'error') throw new Error(`the execution failed\n${n8n.logTail(80)}`);
			if (st !== 'form-waiting' && st !== 'success') return undefined;
			const html = await (await fetch(waitingUrl)).text();
			return html.includes('Record my decision') ? undefined : html;
		}, { what: 'the completion page', timeoutMs: 60_000, intervalMs: 200 });
	}

	it('the example uses Operation Ledger Admin version 1 (fixed outputs: Settled 2, Refused 3)', () => {
		const wf = workflow() as { nodes: Array<{ name: string; type: string; typeVersion: number }>; connections: Record<string, { main: Array<Array<{ node: string }>> }> };
		const admins = wf.nodes.filter((n) => n.type.endsWith('.operationLedgerAdmin'));
		expect(admins.map((n) => [n.name, n.typeVersion])).toEqual([['List Review Queue', 1], ['Settle by Hand', 1]]);
		expect(wf.connections['Settle by Hand'].main.map((o) => o.map((c) => c.node))).toEqual([['Unrecorded'], [], ['Decision Recorded'], ['Already Decided']]);
		// A List that fails (database down, operator role missing) ends on its own page, not on n8n's "Problem loading form".
		expect(wf.connections['List Review Queue'].main.map((o) => o.map((c) => c.node))).toEqual([['Could Not List'], ['Anything to Review?']]);
	});

	it('lists the review queue, records a decision with who and why, and the next Reserve answers from it', async () => {
		await makeReview(key(1));
		await makeReview(key(2));
		const { waitingUrl, html } = await open('alice@example.com');
		expect(html).toContain('Settle an operation by hand');
		expect(html).toContain(key(1));
		expect(html).toContain(key(2));
		const done = await decide(waitingUrl, [key(1), 'Happened', 'pi_review_1', 'found the charge in the provider dashboard']);
		expect(done).toContain('Decision recorded');
		expect(done).toContain('decided by alice@example.com');
		expect(await row(key(1))).toMatchObject({ status: 'succeeded', external_ref: 'pi_review_1', settled_by: 'alice@example.com' });
		const ev = await admin.query(`SELECT detail, node_name, execution_id FROM ${q}.operation_events WHERE operation_key = $1 AND event = 'settled_by_hand'`, [key(1)]);
		expect(ev.rows).toHaveLength(1);
		expect(ev.rows[0]).toMatchObject({ node_name: 'Settle by Hand', detail: { decidedBy: 'alice@example.com', reason: 'found the charge in the provider dashboard' } });
		expect(ev.rows[0].execution_id).toBeTruthy();
		expect(await reserveAgain(key(1))).toMatchObject({ outcome: 'already_succeeded', externalRef: 'pi_review_1' });
		log(`alice settled ${key(1)}`);
	}, 5 * 60_000);

	it('a second person who decides the same operation later is refused, naming who decided', async () => {
		// Bob opened the queue while key 2 was still in review...
		const bob = await open('bob@example.com');
		expect(bob.html).toContain(key(2));
		// ...Carol settles it first.
		const carol = await open('carol@example.com');
		expect(await decide(carol.waitingUrl, [key(2), 'Did Not Happen', '', 'no charge under this idempotency key at the provider'])).toContain('Decision recorded');
		const late = await decide(bob.waitingUrl, [key(2), 'Happened', 'pi_bob', 'I think it went through']);
		expect(late).toContain('already decided');
		expect(late).toContain('carol@example.com');
		expect(await row(key(2))).toMatchObject({ status: 'failed', retryable: true, settled_by: 'carol@example.com', external_ref: null });
		expect(await reserveAgain(key(2))).toMatchObject({ outcome: 'proceed', attempt: 2 });
	}, 5 * 60_000);

	it('a decision the node refuses as input ends on "Not recorded" and changes nothing', async () => {
		await makeReview(key(3));
		const erin = await open('erin@example.com');
		const page = await decide(erin.waitingUrl, [key(3), 'Happened', '', 'looks fine to me']);
		expect(page).toContain('Not recorded');
		expect(page).toContain('reference');
		expect(await row(key(3))).toMatchObject({ status: 'review', settled_by: null });
		// Tidy up for the next case: settle it properly.
		const again = await open('erin@example.com');
		expect(await decide(again.waitingUrl, [key(3), 'Did Not Happen', '', 'checked: no such charge'])).toContain('Decision recorded');
	}, 5 * 60_000);

	it('an empty review queue ends on "Nothing to review"', async () => {
		// The state this case stands on: no operation of this schema is in review any more.
		const inReview = async () => (await admin.query(`SELECT count(*)::int AS n FROM ${q}.operations WHERE status = 'review'`)).rows[0].n;
		expect(await inReview()).toBe(0);
		const { html } = await open('dave@example.com');
		expect(html).toContain('Nothing to review');
	}, 5 * 60_000);
});
