// What `npm run demo` (scripts/demo.mjs) must have seen for its story to hold, as a pure check over
// what it recorded, so that the rule behind its exit status is tested on its own
// (test/unit/demo-story.test.ts) as well as end to end (test/e2e/demo.test.ts).

/** The two orders of the demo: the replay and conflict story, and the crash window. */
export const DEMO_ORDERS = [
	{ story: 'replay and conflict', orderId: 'order-1001', customerId: 'cus_42' },
	{ story: 'crash window', orderId: 'order-1002', customerId: 'cus_43' },
];

/** The ledger key Charge Payment (workflows/idempotent-payment.json) derives from an order id. */
export const operationKeyOf = (orderId) => `payment:charge:${orderId}:v1`;

/**
 * The problems with a demo run, one sentence each; an empty list means the story holds.
 *
 *   orders    DEMO_ORDERS (or a subset): each order's customerId tells its payments and charges apart
 *   steps     [{ label, expected, got }]: each step's expected outcome and what it took (strings)
 *   payments  every payment at the provider ({ id, customerId })
 *   posts     every POST the provider received ({ body: { customerId } })
 *   ledger    the ledger rows ({ operation_key, status, external_ref })
 *
 * The story holds when every step took the expected outcome and, per order key, the provider holds
 * exactly one payment, received exactly one charge, and the ledger row is succeeded with that
 * payment's reference; and no payment belongs to no order.
 */
export function storyProblems({ orders, steps, payments, posts, ledger }) {
	const problems = [];
	for (const s of steps) {
		if (s.got !== s.expected) problems.push(`${s.label}: expected ${s.expected}, got ${s.got ?? '(nothing)'}`);
	}
	for (const o of orders) {
		const paid = payments.filter((p) => p.customerId === o.customerId);
		const sent = posts.filter((q) => q.body?.customerId === o.customerId);
		const key = operationKeyOf(o.orderId);
		const row = ledger.find((r) => r.operation_key === key);
		if (paid.length !== 1) problems.push(`${key}: expected exactly 1 payment at the provider, found ${paid.length}`);
		if (sent.length !== 1) problems.push(`${key}: expected exactly 1 charge sent to the provider, found ${sent.length}`);
		if (!row) problems.push(`${key}: no ledger row`);
		else if (row.status !== 'succeeded' || row.external_ref !== paid[0]?.id) {
			problems.push(`${key}: expected a succeeded ledger row holding ${paid[0]?.id ?? 'the payment'}, got ${row.status} ${row.external_ref ?? '(no reference)'}`);
		}
	}
	const strays = payments.filter((p) => !orders.some((o) => o.customerId === p.customerId));
	if (strays.length) problems.push(`${strays.length} payment(s) at the provider belong to no order of the demo`);
	return problems;
}
