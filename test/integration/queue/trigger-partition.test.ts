/**
 * Issue 23, real time: the Priority Dequeue Trigger (its own trigger(), claim mode, LISTEN on)
 * behind a network partition of 40 s (a loopback proxy that stops forwarding and keeps every
 * socket open, test/helpers/blackholeProxy.ts). Before: the claim in flight hung for ever, the
 * trigger never claimed again (0 claims in the 45 s after the heal with 417 tasks pending) and
 * logged nothing. Now every claim and due check ends within the client's deadline, the outage is
 * logged, and after the heal the trigger claims again, logs the recovery, and replaces its dead
 * LISTEN connection.
 *
 * Slow: about 60 s (40 s of partition plus the recovery); bounded by a 120 s jest timeout.
 */
import { closeAllPools } from '../../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { waitFor } from '../../helpers/wait';
import { testCredentials } from '../../helpers/fakeExecute';
import { startBlackholeProxy, type BlackholeProxy } from '../../helpers/blackholeProxy';
import { activateTrigger, type ActiveTrigger } from '../../helpers/triggerHarness';
import { enqueue } from '../../../src/queue';

const PARTITION_MS = 40_000;

let db: Awaited<ReturnType<typeof testDatabase>>;
let proxy: BlackholeProxy;
let trigger: ActiveTrigger | undefined;

beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_partition' });
	const target = new URL(DATABASE_URL);
	proxy = await startBlackholeProxy(target.hostname, Number(target.port || 5432));
});
afterAll(async () => {
	await trigger?.close();
	await closeAllPools();
	await proxy.close();
	await db.drop();
});

it(
	'claims again after a 40 s partition heals, and logs the outage and the recovery',
	async () => {
		const queue = 'partition';
		await enqueue(
			db.pool,
			db.ledgerSchema,
			Array.from({ length: 417 }, (_, i) => ({ queue, group: 'normal', payload: { i } })),
		);
		const claimed = () => trigger!.emitted.reduce((n, items) => n + items.length, 0);
		// Executions run until the test lets them finish (finishRunning), so that the trigger's next
		// claim starts exactly when the test says: right after the partition begins.
		const running: Array<() => void> = [];
		let finishAtOnce = false;
		const finishRunning = () => running.splice(0).forEach((finish) => finish());
		trigger = await activateTrigger({
			credentials: testCredentials(proxy.through(DATABASE_URL), db.schema, { statementTimeoutMs: 5000, connectTimeoutMs: 3000, lockTimeoutMs: 500, maxConnections: 2 }),
			parameters: {
				queue,
				mode: 'claim',
				priorityGroups: { group: [{ name: 'normal', weight: 1 }] },
				batchSize: 5,
				leaseSeconds: 600,
				useListen: true,
				pollSeconds: 5,
				maxInFlight: 1,
				maxPerMinute: 6000,
				options: {},
			},
			consumer: () => new Promise((r) => (finishAtOnce ? r('success') : running.push(() => r('success')))),
		});
		await waitFor(
			() => {
				finishRunning();
				return claimed() >= 10;
			},
			{ what: 'the first claims', timeoutMs: 10_000 },
		);
		// An execution holds the trigger's one slot; the partition starts, then it finishes: the
		// claim that follows is on its way through the partition.
		await waitFor(() => running.length === 1, { what: 'an execution running' });
		proxy.blackhole();
		const partitionAt = Date.now();
		finishRunning();
		await new Promise((r) => setTimeout(r, PARTITION_MS)); // real time on purpose: the partition's length is the case under test
		const duringPartition = trigger.executions.filter((t) => t > partitionAt + 1000).length;
		proxy.heal();
		const healAt = Date.now();
		finishAtOnce = true;
		finishRunning();
		const before = claimed();
		expect(duringPartition).toBe(0);
		// The outage was logged (once, as a warning) while it lasted.
		expect(trigger.warnings.some((w) => /checking the queue failed/.test(w))).toBe(true);

		await waitFor(() => claimed() > before, { what: 'a claim after the heal', timeoutMs: 45_000 });
		const resumedAfterMs = Date.now() - healAt;
		await waitFor(() => trigger!.infos.some((m) => /the queue answers again after/.test(m)), { what: 'the recovery logged', timeoutMs: 5_000 });
		// The LISTEN connection of the partition is dead for good (the proxy never forwards on it
		// again): a new one was opened after the heal.
		await waitFor(async () =>
			(
				await db.pool.query(
					`SELECT 1 FROM pg_stat_activity WHERE application_name = 'n8n-nodes-operation-ledger:listen' AND query LIKE 'LISTEN %' AND backend_start > to_timestamp($1 / 1000.0)`,
					[healAt],
				)
			).rowCount! > 0, { what: 'a new LISTEN connection after the heal', timeoutMs: 45_000 });
		// eslint-disable-next-line no-console
		console.log(`trigger partition: claims resumed ${resumedAfterMs} ms after the heal; ${claimed() - before} task(s) claimed since`);
	},
	120_000,
);
