#!/usr/bin/env node
// `npm run fake-payments-api`: the fake payments provider that workflows/idempotent-payment.json and
// workflows/reconcile-payments.json call, on http://127.0.0.1:4010 (PORT=<n> to change; PORT=0 = a
// free port). The same implementation as the tests and `npm run demo` (test/helpers/fakePaymentsApi.ts).
// It keeps payments in memory only: a restart forgets them (a later lookup then answers 404).
// Listens on loopback only. Stops on Ctrl-C (SIGINT) or SIGTERM.
import { loadFakePaymentsApi } from './lib/fake-payments.mjs';

const raw = process.env.PORT ?? '4010';
const port = Number(raw);
if (!/^\d+$/.test(raw) || port > 65535) {
	console.error(`PORT must be a TCP port number (0-65535), got ${JSON.stringify(raw)}`);
	process.exit(2);
}

const { startFakePaymentsApi } = await loadFakePaymentsApi();
let api;
try {
	api = await startFakePaymentsApi({ port });
} catch (err) {
	console.error(`Cannot listen on 127.0.0.1:${port}: ${err.message}`);
	process.exit(1);
}
console.log(`Fake payments API listening on ${api.url}`);
console.log(`  POST ${api.url}/payments                         charge; send an Idempotency-Key header (a repeat replays the first answer)`);
console.log(`  GET  ${api.url}/payments?idempotency_key=<key>   look a payment up: 200 with the payment, 404 when none`);
console.log('Payments live in memory only. Ctrl-C stops.');

let stopping = false;
const stop = async () => {
	if (stopping) return;
	stopping = true;
	await api.close();
	process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
