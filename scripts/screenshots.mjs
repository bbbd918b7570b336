#!/usr/bin/env node
// Screenshots of the package in a real n8n editor, for docs/screenshots/ and the README:
//
//   node scripts/screenshots.mjs            # writes docs/screenshots/*.png, prints a check per page
//
// What it does: packs this package and installs the tarball into a fresh n8n (the e2e harness,
// scripts/lib/n8n.mjs, same n8n version rules: N8N_VERSION etc.), imports a working credential
// (id ledger-pg, named "Operation Ledger Postgres account" as n8n names a new one), one pointing at a
// closed port, a fake OpenAI credential and every example in workflows/, creates the owner over
// n8n's REST API, then drives the editor in headless Chromium (Debian's `chromium` package; set
// CHROMIUM to use another binary) through playwright-core, which it installs on first use into
// .cache/screenshot-tools (not a dependency of the package).
//
// Pages: the node creator searching "operation ledger", each example on the canvas (zoomed to
// fit), the Reserve Operation panel, the credential test passing and failing. On every page it
// checks that no node is n8n's unknown-node placeholder ("not currently installed") and, on the
// example canvases, that no node shows an issue marker (credential or parameter warning); a failed
// check fails the script (exit 1), so CI can run it.
//
// Database: DATABASE_URL, else an embedded Postgres. Bounded: every wait below has a timeout; the
// whole run takes 2-4 minutes after the n8n runtime is installed.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { getDatabase, repoRoot } from './lib/embedded-pg.mjs';
import { createN8nInstance, packPackage } from './lib/n8n.mjs';

const OUT = path.join(repoRoot, 'docs', 'screenshots');
const TOOLS = path.join(repoRoot, '.cache', 'screenshot-tools');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const OWNER = { email: 'owner@example.com', firstName: 'Ada', lastName: 'Owner', password: 'Screenshots-2026!' };
const log = (m) => console.log(`[screenshots] ${m}`);

function playwright() {
	const req = createRequire(path.join(TOOLS, 'package.json'));
	try {
		return req('playwright-core');
	} catch {
		log(`installing playwright-core into ${path.relative(repoRoot, TOOLS)} (first run only)`);
		mkdirSync(TOOLS, { recursive: true });
		if (!existsSync(path.join(TOOLS, 'package.json'))) writeFileSync(path.join(TOOLS, 'package.json'), '{"private":true}\n');
		execFileSync('npm', ['install', '--no-audit', '--no-fund', 'playwright-core@1'], { cwd: TOOLS, stdio: 'inherit', timeout: 5 * 60_000 });
		return req('playwright-core');
	}
}

async function main() {
	if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install chromium (or set CHROMIUM)`);
	const { chromium } = playwright();
	const db = await getDatabase();
	const tarball = await packPackage();
	const n8n = await createN8nInstance({ databaseUrl: db.url, tarball });
	const problems = [];
	let browser;
	try {
		const ledgerConn = (connectionString) => ({
			connectionType: 'connectionString',
			connectionString,
			ssl: 'disable',
			schema: 'operation_ledger',
			autoApplySchema: true,
			maxConnections: 2,
		});
		const closed = new URL(db.url);
		closed.port = '1';
		await n8n.importCredentials([
			{ id: 'ledger-pg', name: 'Operation Ledger Postgres account', type: 'operationLedgerPostgresApi', data: ledgerConn(db.url) },
			{ id: 'ledger-operator-pg', name: 'Operation Ledger Postgres (operator)', type: 'operationLedgerPostgresApi', data: ledgerConn(db.url) },
			{ id: 'ledger-bad', name: 'Operation Ledger Postgres (closed port)', type: 'operationLedgerPostgresApi', data: ledgerConn(closed.toString()) },
			{ id: 'openai-api', name: 'OpenAI', type: 'openAiApi', data: { apiKey: 'sk-not-a-real-key', header: false } },
		]);
		const examples = readdirSync(path.join(repoRoot, 'workflows'))
			.filter((f) => f.endsWith('.json'))
			.map((f) => ({ file: f.replace(/\.json$/, ''), wf: JSON.parse(readFileSync(path.join(repoRoot, 'workflows', f), 'utf8')) }));
		await n8n.importWorkflow(examples.map((e) => e.wf));
		await n8n.start();

		const setup = await fetch(`${n8n.url}/rest/owner/setup`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(OWNER),
		});
		if (!setup.ok) throw new Error(`owner setup answered ${setup.status}: ${await setup.text()}`);

		browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
		const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
		const login = await context.request.post(`${n8n.url}/rest/login`, { data: { emailOrLdapLoginId: OWNER.email, password: OWNER.password } });
		if (!login.ok()) throw new Error(`login answered ${login.status()}`);
		const page = await context.newPage();
		page.setDefaultTimeout(30_000);
		mkdirSync(OUT, { recursive: true });

		const shot = async (name) => {
			await page.waitForTimeout(800);
			await page.screenshot({ path: path.join(OUT, `${name}.png`) });
			log(`docs/screenshots/${name}.png`);
		};
		const noPlaceholder = async (where) => {
			const text = await page.locator('body').innerText();
			if (/not currently installed|install this node to use it/i.test(text)) problems.push(`${where}: an unknown-node placeholder`);
		};
		const closeModals = async () => {
			for (let i = 0; i < 3; i++) await page.keyboard.press('Escape');
		};

		// 1. The node creator, searching for the package's nodes (in a workflow that has a trigger,
		// so the creator lists actions and triggers, not only triggers).
		await page.goto(`${n8n.url}/workflow/idempotent-payment`);
		await page.waitForSelector('[data-test-id="canvas-node"]');
		await closeModals();
		await page.locator('[data-test-id="node-creator-plus-button"]').first().click();
		// Type into the creator's search field only once it is there (on the canvas, "l" would open
		// the logs panel).
		const search = page.locator('[data-test-id="node-creator"] input').first();
		await search.waitFor();
		await search.fill('ledger');
		await shot('node-creator-search');
		await noPlaceholder('node creator');
		await closeModals();

		// 2. Each example on the canvas.
		for (const { file, wf } of examples) {
			await page.goto(`${n8n.url}/workflow/${wf.id}`);
			await page.waitForSelector('[data-test-id="canvas-node"]');
			await closeModals();
			await page.locator('[data-test-id="canvas-node"]').first().hover().catch(() => undefined);
			await page.keyboard.press('Shift+1').catch(() => undefined); // zoom to fit
			await page.mouse.move(5, 5);
			await shot(`example-${file}`);
			await noPlaceholder(`example ${file}`);
			const issues = await page.locator('[data-test-id="node-issues"]').count();
			if (issues) problems.push(`example ${file}: ${issues} node(s) show an issue marker`);
		}

		// 3. The Reserve Operation panel (the payment example).
		await page.goto(`${n8n.url}/workflow/idempotent-payment`);
		await page.waitForSelector('[data-test-id="canvas-node"]');
		await closeModals();
		await page.locator('[data-test-id="canvas-node"][data-node-name="Reserve Operation"], [data-test-id="canvas-node"]:has-text("Reserve Operation")').first().dblclick();
		await page.waitForSelector('[data-test-id="ndv"]');
		await shot('reserve-operation-panel');
		await noPlaceholder('Reserve panel');
		await closeModals();

		// 4. The credential test, passing and failing (n8n tests a credential when it is saved).
		for (const [id, name, expectOk] of [
			['ledger-pg', 'credential-test-ok', true],
			['ledger-bad', 'credential-test-failed', false],
		]) {
			await page.goto(`${n8n.url}/home/credentials/${id}`);
			await page.waitForSelector('[data-test-id="credential-save-button"]');
			await page.locator('[data-test-id="credential-save-button"]').click();
			const ok = page.locator('[data-test-id="credentials-config-container-test-success"]');
			const bad = page.getByText(/couldn.t connect|connection refused|ECONNREFUSED/i).first();
			const which = await Promise.race([
				ok.waitFor({ timeout: 60_000 }).then(() => true),
				bad.waitFor({ timeout: 60_000 }).then(() => false),
			]).catch(() => undefined);
			if (which !== expectOk) problems.push(`credential ${id}: expected the test to ${expectOk ? 'pass' : 'fail'}, saw ${which === undefined ? 'no result' : which ? 'pass' : 'fail'}`);
			await shot(name);
			await closeModals();
		}
	} finally {
		await browser?.close().catch(() => undefined);
		await n8n.cleanup().catch(() => undefined);
		await db.stop?.().catch(() => undefined);
	}
	if (problems.length) {
		console.error(`[screenshots] checks failed:\n  ${problems.join('\n  ')}`);
		process.exitCode = 1;
	} else {
		log('checks passed: no unknown-node placeholder, no node issue marker on the examples, credential test pass/fail as expected');
	}
}

main().catch((e) => {
	console.error(e);
	process.exitCode = 1;
});
