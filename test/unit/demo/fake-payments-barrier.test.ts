/**
 * The fake provider's commit barrier (test/helpers/fakePaymentsApi.ts committed()), which the demo
 * and the crash-window test use to kill n8n between the provider's commit and the ledger's record:
 * it resolves once the payment is committed while the answer is still held, so the kill needs no
 * sleep and cannot land too early or too late.
 */
import { startFakePaymentsApi, type FakePaymentsApi } from '../../helpers/fakePaymentsApi';

describe('the fake provider commit barrier', () => {
	let api: FakePaymentsApi;
	beforeEach(async () => {
		api = await startFakePaymentsApi();
	});
	afterEach(async () => {
		await api.close();
	});

	const charge = (customerId: string, signal?: AbortSignal) =>
		fetch(`${api.url}/payments`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'idempotency-key': `key-${customerId}` },
			body: JSON.stringify({ customerId, amount: 1500, currency: 'EUR' }),
			signal,
		});

	it('resolves on the commit while the held answer is still unsent', async () => {
		api.setMode(['commit-then-hang']);
		const barrier = api.committed((p) => p.customerId === 'cus_43', 5000);
		const abort = new AbortController();
		let answered = false;
		const request = charge('cus_43', abort.signal).then(
			() => (answered = true),
			() => undefined,
		);
		const payment = await barrier;
		expect(payment).toMatchObject({ id: 'pay_1', customerId: 'cus_43', idempotencyKey: 'key-cus_43' });
		expect(answered).toBe(false);
		expect(api.requests().map((r) => r.outcome)).toEqual(['hang']);
		abort.abort(); // the client goes away, as a killed n8n does
		await request;
		expect(answered).toBe(false);
	});

	it('resolves at once for a payment committed before the call, and matches only its own', async () => {
		await (await charge('cus_42')).arrayBuffer();
		await expect(api.committed((p) => p.customerId === 'cus_42')).resolves.toMatchObject({ id: 'pay_1' });
		const other = api.committed((p) => p.customerId === 'cus_44', 5000);
		await (await charge('cus_45')).arrayBuffer();
		await (await charge('cus_44')).arrayBuffer();
		await expect(other).resolves.toMatchObject({ id: 'pay_3', customerId: 'cus_44' });
	});

	it('rejects when nothing matching is committed in time, or when the server closes', async () => {
		await expect(api.committed((p) => p.customerId === 'nobody', 50)).rejects.toThrow('no matching payment was committed within 50 ms');
		const pending = api.committed((p) => p.customerId === 'nobody', 60_000);
		await api.close();
		await expect(pending).rejects.toThrow('the fake payments API was closed');
		api = await startFakePaymentsApi(); // for afterEach
	});
});
