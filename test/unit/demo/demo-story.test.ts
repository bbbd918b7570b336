/**
 * The rule behind `npm run demo`'s exit status (scripts/lib/demo-story.mjs): every step took its
 * expected outcome and each order key has exactly one payment, one charge sent and a succeeded
 * ledger row holding that payment, across both stories (replay and conflict, crash window).
 */
import { nodeRequire, type Json } from '../../helpers/n8nHarness';

const story = nodeRequire('../../scripts/lib/demo-story.mjs') as {
	DEMO_ORDERS: Array<{ story: string; orderId: string; customerId: string }>;
	operationKeyOf(orderId: string): string;
	storyProblems(run: Json): string[];
};
const { DEMO_ORDERS, operationKeyOf, storyProblems } = story;

/** What a demo run where everything went as told records. */
function goodRun(): Json {
	return {
		orders: DEMO_ORDERS,
		steps: [
			{ label: 'Run 1', expected: 'Succeeded', got: 'Succeeded' },
			{ label: 'Retry 1', expected: 'Reconcile', got: 'Reconcile' },
		],
		payments: DEMO_ORDERS.map((o, i) => ({ id: `pay_${i + 1}`, customerId: o.customerId })),
		posts: DEMO_ORDERS.map((o) => ({ body: { customerId: o.customerId } })),
		ledger: DEMO_ORDERS.map((o, i) => ({ operation_key: operationKeyOf(o.orderId), status: 'succeeded', external_ref: `pay_${i + 1}` })),
	};
}

describe('the demo story rule', () => {
	it('has two order keys, one per story', () => {
		expect(DEMO_ORDERS.map((o) => o.story)).toEqual(['replay and conflict', 'crash window']);
		expect(new Set(DEMO_ORDERS.map((o) => o.customerId)).size).toBe(2);
		expect(operationKeyOf('order-1002')).toBe('payment:charge:order-1002:v1');
	});

	it('holds for one payment per order key and the expected outcomes', () => {
		expect(storyProblems(goodRun())).toEqual([]);
	});

	it('fails on a second payment for the crashed order (a retry that charged again)', () => {
		const run = goodRun();
		run.payments.push({ id: 'pay_3', customerId: 'cus_43' });
		run.posts.push({ body: { customerId: 'cus_43' } });
		expect(storyProblems(run)).toEqual([
			'payment:charge:order-1002:v1: expected exactly 1 payment at the provider, found 2',
			'payment:charge:order-1002:v1: expected exactly 1 charge sent to the provider, found 2',
		]);
	});

	it('fails when the first story charged nothing', () => {
		const run = goodRun();
		run.payments = run.payments.filter((p: Json) => p.customerId !== 'cus_42');
		expect(storyProblems(run)).toContain('payment:charge:order-1001:v1: expected exactly 1 payment at the provider, found 0');
	});

	it('fails on a step that took another outcome, and on a step that took none', () => {
		const run = goodRun();
		run.steps[1].got = 'Unknown';
		run.steps.push({ label: 'Retry 2', expected: 'Done Before', got: undefined });
		expect(storyProblems(run)).toEqual(['Retry 1: expected Reconcile, got Unknown', 'Retry 2: expected Done Before, got (nothing)']);
	});

	it('fails when the ledger row is not succeeded with the payment it found', () => {
		const run = goodRun();
		run.ledger[1] = { ...run.ledger[1], status: 'unknown', external_ref: null };
		expect(storyProblems(run)).toEqual(['payment:charge:order-1002:v1: expected a succeeded ledger row holding pay_2, got unknown (no reference)']);
		run.ledger.pop();
		expect(storyProblems(run)).toEqual(['payment:charge:order-1002:v1: no ledger row']);
	});

	it('fails on a payment that belongs to no order of the demo', () => {
		const run = goodRun();
		run.payments.push({ id: 'pay_9', customerId: 'cus_other' });
		expect(storyProblems(run)).toEqual(['1 payment(s) at the provider belong to no order of the demo']);
	});
});
