// Many single-task producers: 32 producers, each enqueueing one task per call (one
// transaction each), for a fixed time, with each notify mode of Enqueue, against a plain INSERT and
// an INSERT + NOTIFY of the same row; and the pickup latency a LISTENing consumer sees meanwhile
// (enqueue call start → the task claimed), plus the idle pickup latency of one task at a time.
//   commit  pg_notify inside the enqueue transaction (the default)
//   after   the enqueue commits, then a second statement notifies
//   none    no notification; the consumer polls every POLL_MS
import { dist, log, migrateSchema, now, pg, pool, quick, randomSchema, round, sleep, summarize, writeResult, DATABASE_URL, ledgerSchemaOf } from './lib/common.mjs';

const Q = dist('src/queue/index.js');
const PRODUCERS = 32;
const SECONDS = quick ? 3 : 8;
const IDLE_SAMPLES = quick ? 30 : 100;
const POLL_MS = 1000;

const db = pool(PRODUCERS + 4);
const schema = randomSchema('bench_notify');
await migrateSchema(db, schema);
await db.query(`CREATE TABLE "${schema}".plain_insert (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue text, payload jsonb, at timestamptz DEFAULT now())`);

/** A consumer: LISTEN on the queue's channel, claim (batch 500) on every notification (or poll). */
async function consumer(queue, { listen, pollMs }) {
	const c = new pg.Client({ connectionString: DATABASE_URL, application_name: 'bench-consumer' });
	await c.connect();
	const latencies = [];
	let busy = false;
	let again = false;
	let stopped = false;
	const claim = async () => {
		if (busy) {
			again = true;
			return;
		}
		busy = true;
		do {
			again = false;
			const got = await Q.dequeue(db, ledgerSchemaOf(schema), { queue, limit: 500, leaseSeconds: 3600, agingSeconds: 0 });
			const t = Date.now();
			for (const task of got) latencies.push(t - task.payload.t);
			if (got.length === 500) again = true;
		} while (again && !stopped);
		busy = false;
	};
	if (listen) {
		c.on('notification', () => void claim());
		await c.query(`LISTEN ${Q.queueChannel(ledgerSchemaOf(schema), queue)}`);
	}
	const timer = setInterval(() => void claim(), pollMs);
	return {
		async stop() {
			await sleep(pollMs + 200);
			stopped = true;
			clearInterval(timer);
			while (busy) await sleep(10);
			await claim(); // whatever is left
			await c.end();
			return latencies;
		},
	};
}

async function producers(fn) {
	let n = 0;
	const until = now() + SECONDS * 1000;
	const started = now();
	await Promise.all(
		Array.from({ length: PRODUCERS }, async (_, p) => {
			while (now() < until) {
				await fn(p, n);
				n++;
			}
		}),
	);
	return { commits: n, perSec: n / ((now() - started) / 1000) };
}

const rows = [];
// Baselines: the same row shape, no queue function.
for (const kind of ['plain INSERT', 'INSERT + NOTIFY']) {
	const r = await producers((p, i) =>
		kind === 'plain INSERT'
			? db.query(`INSERT INTO "${schema}".plain_insert (queue, payload) VALUES ('x', $1)`, [{ p, i }])
			: db.query(`WITH w AS (INSERT INTO "${schema}".plain_insert (queue, payload) VALUES ('x', $1) RETURNING 1) SELECT pg_notify('bench_plain', 'x') FROM w`, [{ p, i }]),
	);
	rows.push({ kind, commitsPerSec: round(r.perSec, 0), commits: r.commits });
	log(`${kind}: ${round(r.perSec, 0)} commits/s`);
}
for (const mode of ['commit', 'after', 'none']) {
	const queue = `notify-${mode}`;
	const cons = await consumer(queue, { listen: mode !== 'none', pollMs: mode === 'none' ? POLL_MS : 30_000 });
	const r = await producers((p) => Q.enqueue(db, ledgerSchemaOf(schema), [{ queue, group: 'normal', payload: { t: Date.now(), p } }], { notify: mode }));
	const lat = await cons.stop();
	const s = summarize(lat);
	rows.push({
		kind: `Enqueue, notify ${mode}`,
		commitsPerSec: round(r.perSec, 0),
		commits: r.commits,
		pickupUnderLoadMs: { p50: s.median, p90: s.p90, p99: s.p99, n: s.n },
	});
	log(`enqueue notify=${mode}: ${round(r.perSec, 0)} commits/s, pickup p50 ${s.median} ms p90 ${s.p90} ms (n ${s.n})`);
}

// Idle pickup latency: one task at a time, one listening consumer.
const idle = {};
for (const mode of ['commit', 'after']) {
	const queue = `idle-${mode}`;
	const cons = await consumer(queue, { listen: true, pollMs: 30_000 });
	for (let i = 0; i < IDLE_SAMPLES; i++) {
		await Q.enqueue(db, ledgerSchemaOf(schema), [{ queue, group: 'normal', payload: { t: Date.now() } }], { notify: mode });
		await sleep(20 + Math.random() * 30);
	}
	const lat = await cons.stop();
	const s = summarize(lat);
	idle[mode] = { p50: s.median, p90: s.p90, p99: s.p99, n: s.n };
	log(`idle pickup notify=${mode}: p50 ${s.median} ms p90 ${s.p90} ms`);
}

const server = (await db.query(`SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc`)).rows[0];
await db.query(`DROP SCHEMA "${schema}" CASCADE`);
await db.end();
const by = (k) => rows.find((r) => r.kind === k);
writeResult({
	producers: PRODUCERS,
	seconds: SECONDS,
	pollMs: POLL_MS,
	server: { version: server.v, synchronousCommit: server.sc },
	rows,
	idlePickupMs: idle,
	targets: [
		{
			what: 'enqueue notify=after vs notify=commit, 32 single-task producers (commits/s ratio)',
			value: round(by('Enqueue, notify after').commitsPerSec / by('Enqueue, notify commit').commitsPerSec, 2),
			limit: '>= 1.3',
			met: by('Enqueue, notify after').commitsPerSec >= 1.3 * by('Enqueue, notify commit').commitsPerSec,
		},
	],
});
