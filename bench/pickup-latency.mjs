// 4. Pickup latency: from just before the enqueue call to the start of work, one task at a time.
//   ours             - nodes/PriorityDequeueTrigger in "Claim Tasks" mode (batch 1, LISTEN/NOTIFY
//                      on, poll 30 s, Max Executions per Minute 6000), driven by a minimal
//                      hand-written ITriggerFunctions stand-in whose emit() records the time; each
//                      emitted task is then completed. The cap is raised from its default (120)
//                      because a full run starts about 210 executions in 20 to 30 s: with the
//                      default the 121st waited about 50 s for the 60 s window to free (the one
//                      52 s sample of every earlier full run) and the following ones waited for
//                      the window too. That is the cap doing its job, not pickup latency.
//   graphile-worker  - its runner (concurrency 1); the task function records the time.
//   polling loop     - what a Schedule Trigger every 5 s + a claim query gives: measured, and its
//                      expected latency (interval / 2 on average, up to the interval).
// Samples of ours and graphile-worker alternate; a random pause of 10 to 50 ms separates them.
import { credentials, dist, log, migrateSchema, now, pool, quick, randomSchema, round, sleep, summarize, writeResult, DATABASE_URL, ledgerSchemaOf } from './lib/common.mjs';
import { loadGraphileWorker, quietGraphileLogger } from './lib/peers.mjs';

const Q = dist('src/queue/index.js');
const { PriorityDequeueTrigger } = dist('nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node.js');
const { closeAllPools } = dist('src/db/pool.js');

const SAMPLES = quick ? 40 : 200;
const POLL_SECONDS = 5;
const POLL_SAMPLES = quick ? 3 : 12;

const db = pool(6);
const schema = randomSchema('bench_pickup');
await migrateSchema(db, schema);

/** A minimal ITriggerFunctions stand-in: parameters, credentials, emit (recorded), deferred promises. */
function fakeTrigger({ params, creds, onEmit }) {
	return {
		getNodeParameter: (name, fallback) => (name in params ? params[name] : fallback),
		getCredentials: async () => creds,
		getMode: () => 'trigger',
		getNode: () => ({ name: 'Priority Dequeue Trigger', type: 'n8n-nodes-operation-ledger.priorityDequeueTrigger', typeVersion: 1, parameters: {} }),
		logger: { debug: () => undefined, warn: (m) => log(`trigger warn: ${m}`), info: () => undefined, error: (m) => log(`trigger error: ${m}`) },
		helpers: {
			createDeferredPromise: () => {
				let resolve;
				let reject;
				const promise = new Promise((a, b) => {
					resolve = a;
					reject = b;
				});
				return { promise, resolve, reject };
			},
		},
		emit: (data, _response, done) => onEmit(data, done),
	};
}

// ---------------------------------------------------------------- ours: the trigger
const queue = 'pickup';
const sentAt = new Map();
const waiting = new Map();
const ours = [];
const trigger = new PriorityDequeueTrigger();
const tFns = fakeTrigger({
	params: {
		queue,
		mode: 'claim',
		priorityGroups: { group: [{ name: 'high', weight: 5 }, { name: 'normal', weight: 2 }, { name: 'low', weight: 1 }] },
		batchSize: 1,
		leaseSeconds: 60,
		useListen: true,
		pollSeconds: 30,
		maxInFlight: 1,
		maxPerMinute: 6000,
		options: {},
	},
	creds: credentials(schema),
	onEmit: (data, done) => {
		const at = now();
		const tasks = data[0].map((it) => it.json);
		for (const t of tasks) {
			const w = waiting.get(t.payload.n);
			if (w) w(at);
		}
		// The "execution": complete the tasks, then finish.
		void Q.complete(db, ledgerSchemaOf(schema), tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken }))).then(
			() => done?.resolve({}),
			(e) => done?.reject(e),
		);
	},
});
const response = await trigger.trigger.call(tFns);
let seq = 0;
async function oursOnce() {
	const n = ++seq;
	const picked = new Promise((r) => waiting.set(n, r));
	const t0 = now();
	sentAt.set(n, t0);
	await Q.enqueue(db, ledgerSchemaOf(schema), [{ queue, group: 'normal', payload: { n } }]);
	const at = await picked;
	waiting.delete(n);
	return at - t0;
}

// ---------------------------------------------------------------- graphile-worker runner
const gw = loadGraphileWorker();
const gwSchema = randomSchema('bench_gw_pickup');
const logger = quietGraphileLogger(gw);
const gwWaiting = new Map();
const runner = await gw.run({
	connectionString: DATABASE_URL,
	concurrency: 1,
	noHandleSignals: true,
	logger,
	taskList: {
		pickup: async (payload) => {
			const at = now();
			gwWaiting.get(payload.n)?.(at);
		},
	},
	preset: { worker: { schema: gwSchema } },
});
const gwUtils = await gw.makeWorkerUtils({ connectionString: DATABASE_URL, logger, schema: gwSchema });
async function graphileOnce() {
	const n = ++seq;
	const picked = new Promise((r) => gwWaiting.set(n, r));
	const t0 = now();
	await gwUtils.addJob('pickup', { n });
	const at = await picked;
	gwWaiting.delete(n);
	return at - t0;
}

log('warming up');
for (let i = 0; i < 10; i++) {
	await oursOnce();
	await graphileOnce();
}
const gws = [];
for (let i = 0; i < SAMPLES; i++) {
	if (i % 2) {
		ours.push(await oursOnce());
		await sleep(10 + Math.random() * 40);
		gws.push(await graphileOnce());
	} else {
		gws.push(await graphileOnce());
		await sleep(10 + Math.random() * 40);
		ours.push(await oursOnce());
	}
	await sleep(10 + Math.random() * 40);
}
await response.closeFunction();
await runner.stop();
await gwUtils.release();

// ---------------------------------------------------------------- a Schedule-Trigger-style polling loop
const pollQueue = 'pickup-poll';
const pollWaiting = new Map();
let stopPoll = false;
const poller = (async () => {
	while (!stopPoll) {
		await sleep(POLL_SECONDS * 1000);
		if (stopPoll) break;
		const tasks = await Q.dequeue(db, ledgerSchemaOf(schema), { queue: pollQueue, limit: 100 });
		const at = now();
		for (const t of tasks) pollWaiting.get(t.payload.n)?.(at);
		if (tasks.length) await Q.complete(db, ledgerSchemaOf(schema), tasks.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })));
	}
})();
const polled = [];
for (let i = 0; i < POLL_SAMPLES; i++) {
	await sleep(Math.random() * POLL_SECONDS * 1000);
	const n = ++seq;
	const picked = new Promise((r) => pollWaiting.set(n, r));
	const t0 = now();
	await Q.enqueue(db, ledgerSchemaOf(schema), [{ queue: pollQueue, group: 'normal', payload: { n } }]);
	polled.push((await picked) - t0);
}
stopPoll = true;
await poller;

const o = summarize(ours);
const g = summarize(gws);
const p = summarize(polled);
log(`ours p50 ${round(o.median, 2)} ms p99 ${round(o.p99, 2)}; graphile-worker p50 ${round(g.median, 2)} p99 ${round(g.p99, 2)}; 5 s polling p50 ${round(p.median, 0)} ms`);
const result = {
	suite: 'pickup-latency',
	samples: SAMPLES,
	oursMs: o,
	graphileMs: g,
	pollingMs: { ...p, intervalSeconds: POLL_SECONDS, expectedMeanMs: (POLL_SECONDS * 1000) / 2, expectedMaxMs: POLL_SECONDS * 1000 },
	targets: [
		{
			id: 'pickup-p50',
			what: 'Pickup latency p50 no worse than graphile-worker',
			value: round(o.median / g.median),
			limit: 1,
			met: o.median <= g.median,
		},
		{
			id: 'pickup-p99',
			what: 'Pickup latency p99 no worse than graphile-worker',
			value: round(o.p99 / g.p99),
			limit: 1,
			met: o.p99 <= g.p99,
		},
		{
			id: 'pickup-vs-polling',
			what: `Pickup p99 far below a ${POLL_SECONDS} s polling loop's p50`,
			value: round(p.median / o.p99, 0),
			limit: 10,
			met: p.median / o.p99 >= 10,
		},
	],
};
await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.query(`DROP SCHEMA "${gwSchema}" CASCADE`);
await db.end();
await closeAllPools();
writeResult(result);
