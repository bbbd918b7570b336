/**
 * `npm run fake-payments-api` (scripts/fake-payments-api.mjs) serves what the examples call:
 * workflows/idempotent-payment.json POSTs /payments with an Idempotency-Key header, and
 * workflows/reconcile-payments.json GETs /payments?idempotency_key=<key>.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');

async function freePort(): Promise<number> {
	const srv = net.createServer();
	await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', () => resolve()));
	const { port } = srv.address() as net.AddressInfo;
	await new Promise<void>((resolve) => srv.close(() => resolve()));
	return port;
}

/** Resolves with the process's stdout once it printed `marker`; rejects on exit or after 20 s. */
function waitFor(child: ChildProcess, marker: string): Promise<string> {
	return new Promise((resolve, reject) => {
		let out = '';
		let err = '';
		const timer = setTimeout(() => reject(new Error(`no "${marker}" within 20 s; stdout: ${out} stderr: ${err}`)), 20_000);
		child.stdout!.on('data', (c: Buffer) => {
			out += c.toString();
			if (out.includes(marker)) {
				clearTimeout(timer);
				resolve(out);
			}
		});
		child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
		child.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`exited with ${code} before "${marker}"; stderr: ${err}`));
		});
	});
}

describe('npm run fake-payments-api', () => {
	let child: ChildProcess | undefined;
	afterEach(async () => {
		if (child && child.exitCode === null) {
			const exited = new Promise((resolve) => child!.once('exit', resolve));
			child.kill('SIGINT');
			await exited;
		}
	});

	it('is the script package.json runs, and the examples call the default port 4010', () => {
		const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
		expect(pkg.scripts['fake-payments-api']).toBe('node scripts/fake-payments-api.mjs');
		for (const file of ['idempotent-payment.json', 'reconcile-payments.json']) {
			const wf = JSON.parse(readFileSync(path.join(root, 'workflows', file), 'utf8'));
			// The payment is a Guarded HTTP Request, the reconcile lookup n8n's HTTP Request node.
			const http = (t: string) => t === 'n8n-nodes-base.httpRequest' || t === 'n8n-nodes-operation-ledger.guardedHttpRequest';
			const urls = wf.nodes.filter((n: { type: string }) => http(n.type)).map((n: { parameters: { url: string } }) => n.parameters.url);
			expect(urls).toEqual(['http://127.0.0.1:4010/payments']);
		}
	});

	it('listens on PORT, takes a payment with an Idempotency-Key and finds it by that key; Ctrl-C stops it', async () => {
		const port = await freePort();
		child = spawn(process.execPath, [path.join(root, 'scripts/fake-payments-api.mjs')], {
			cwd: root,
			env: { ...process.env, PORT: String(port) },
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		const banner = await waitFor(child, 'Ctrl-C stops');
		const url = `http://127.0.0.1:${port}`;
		expect(banner).toContain(`listening on ${url}`);
		expect(banner).toContain(`POST ${url}/payments`);
		expect(banner).toContain(`GET  ${url}/payments?idempotency_key=`);

		const charge = await fetch(`${url}/payments`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'idempotency-key': 'h8-key-1' },
			body: JSON.stringify({ customerId: 'cus_1', amount: 4200, currency: 'EUR' }),
		});
		expect(charge.status).toBe(201);
		const paid = (await charge.json()) as { id: string; status: string };
		expect(paid.status).toBe('succeeded');

		const found = await fetch(`${url}/payments?idempotency_key=h8-key-1`);
		expect(found.status).toBe(200);
		expect(((await found.json()) as { id: string }).id).toBe(paid.id);
		const missing = await fetch(`${url}/payments?idempotency_key=h8-other`);
		expect(missing.status).toBe(404);

		const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
		child.kill('SIGINT');
		expect(await exited).toBe(0);
	}, 40_000);
});
