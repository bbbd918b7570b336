/**
 * Issue 29: does the promise survive a database failover? Measured, per replication setup.
 *
 * Each case: a private primary and a streaming standby on loopback (PostgreSQL's binaries under
 * /usr/lib/postgresql/<v>/bin, pg_basebackup -R), reached through a "writer endpoint" (a TCP proxy
 * on loopback, as a virtual IP or a managed service's endpoint would be). Under load:
 *   - 4 ledger workers: Reserve (a new key each time) → the outside write, a POST to a real HTTP
 *     server on loopback that records every write it receives → Confirm succeeded;
 *   - 1 producer enqueues tasks, 3 consumers dequeue (lease 3 s) → POST the task's run to the HTTP
 *     server → complete.
 * After FAILOVER_LOAD_SECONDS (default 6; longer, up to 4 times that, until 150 operations were
 * confirmed and 150 tasks acknowledged, when the machine is slow) the primary's machine dies (SIGSTOP then SIGKILL to every
 * process of the cluster), the standby is promoted and the endpoint moved to it. Synchronous cases
 * then meet the promoted standby's inherited synchronous_standby_names = '*' with no standby of its
 * own (a write ends after Statement Timeout + 1 s with ReplicationUnconfirmedError), the operator
 * clears it, and the load runs on the new primary until 20 more operations were confirmed and 20 tasks
 * acknowledged and completed there; then the queue is drained. Counted:
 *   - writes granted twice: keys the HTTP server received a write for that Reserve (same request)
 *     answers Proceed again on the new primary;
 *   - confirmed outcomes lost: keys whose Confirm answered "recorded" that are not succeeded there;
 *   - tasks lost: enqueues that were acknowledged and whose task never ran;
 *   - tasks run twice: tasks that ran again after their completion was acknowledged.
 *   (Tasks running again after a completion that was NOT acknowledged, the worker's own crash
 *   window, are at-least-once by design and printed separately.)
 * Asynchronous replication is expected to lose data: its figures are printed, not asserted zero;
 * the lagging case (the primary's WAL sender stopped 1 s before the kill) must show the loss, which proves the
 * counters see it. Synchronous replication (on, remote_apply) must show 0 / 0 / 0 / 0.
 * Figures: docs/high-availability.md. Run time: about 20 s per case, 90 s for the file.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { randomBytes } from 'node:crypto';
import { Agent, createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { ReplicationUnconfirmedError, type Bounds } from '../../../src/db/bounds';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { confirmOperations, prepareConfirmItem } from '../../../src/ledger/confirm';
import { complete, dequeue, enqueue, nextDue } from '../../../src/queue';
import { freePort, sleep, startPrivatePostgres, startStandby, type PrivatePostgres } from '../../helpers/privatePostgres';
import { waitFor } from '../../helpers/wait';

const LOAD_MS = Number(process.env.FAILOVER_LOAD_SECONDS ?? 6) * 1000;
jest.setTimeout(LOAD_MS * 4 + 180_000);

const SCHEMA = 'hz_failover';
const QUEUE = 'failover';
const BOUNDS: Bounds = { statementTimeoutMs: 2000, lockTimeoutMs: 1000 };
const TASK_LEASE_S = 3;
/** Confirmed operations and acknowledged tasks the load phase waits for (see runCase). */
const MIN_CONFIRMED = 150;

/** The outside system: records every write and every task run it receives (never deduplicates). */
async function outsideSystem() {
	const writes = new Map<string, number>();
	/** The Idempotency-Key header of each key's write. */
	const idempotencyKeys = new Map<string, string>();
	const runs = new Map<string, number>();
	const server: Server = createHttpServer((req, res) => {
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			const { key } = JSON.parse(body) as { key: string };
			if (req.url === '/pay') idempotencyKeys.set(key, String(req.headers['idempotency-key']));
			const map = req.url === '/pay' ? writes : runs;
			map.set(key, (map.get(key) ?? 0) + 1);
			res.writeHead(201, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ id: `ref_${randomBytes(4).toString('hex')}` }));
		});
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const port = (server.address() as { port: number }).port;
	const agent = new Agent({ keepAlive: true, maxSockets: 16 });
	const post = (path: string, key: string, idempotencyKey?: string) =>
		new Promise<string>((resolve, reject) => {
			const req = httpRequest(
				{ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) } },
				(res) => {
					let b = '';
					res.on('data', (c) => (b += c));
					res.on('end', () => resolve((JSON.parse(b) as { id: string }).id));
				},
			);
			req.on('error', reject);
			req.end(JSON.stringify({ key }));
		});
	return {
		writes,
		idempotencyKeys,
		runs,
		pay: (key: string, idem: string) => post('/pay', key, idem),
		run: (key: string) => post('/task', key),
		close: () => {
			agent.destroy();
			return new Promise<void>((r) => server.close(() => r()));
		},
	};
}

/** A writer endpoint: a TCP proxy on loopback that leads to whichever server is the primary. */
async function writerEndpoint(target: number) {
	let current = target;
	const pairs = new Set<[Socket, Socket]>();
	const server: NetServer = createServer((client) => {
		const upstream = connect(current, '127.0.0.1');
		const pair: [Socket, Socket] = [client, upstream];
		pairs.add(pair);
		const end = () => {
			client.destroy();
			upstream.destroy();
			pairs.delete(pair);
		};
		client.on('error', end).on('close', end);
		upstream.on('error', end).on('close', end);
		client.pipe(upstream);
		upstream.pipe(client);
	});
	const port = await freePort();
	await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
	return {
		port,
		/** New connections go to `to`; existing ones are cut. */
		moveTo(to: number) {
			current = to;
			for (const [a, b] of pairs) {
				a.destroy();
				b.destroy();
			}
			pairs.clear();
		},
		close: () => new Promise<void>((r) => {
			for (const [a, b] of pairs) {
				a.destroy();
				b.destroy();
			}
			server.close(() => r());
		}),
	};
}

interface Case {
	name: string;
	synchronousCommit?: 'on' | 'remote_apply';
	/** Stop the primary's WAL sender this long before the kill (asynchronous: the standby falls behind). */
	lagMs?: number;
}

interface Figures {
	case: string;
	writes: number;
	confirmed: number;
	grantedTwice: number;
	/** Of those, granted with the same downstream Idempotency-Key as the write that happened (a target that honours it deduplicates). */
	sameIdempotencyKey: number;
	confirmedLost: number;
	tasksAcked: number;
	tasksLost: number;
	tasksRunTwice: number;
	inFlightRerun: number;
	blockedWriteMs: number | null;
	errorsDuringFailover: number;
}

async function setReplication(pg: PrivatePostgres, names: string, commit: string) {
	await pg.sql(`ALTER SYSTEM SET synchronous_standby_names = '${names}'`, [], 'postgres');
	await pg.sql(`ALTER SYSTEM SET synchronous_commit = '${commit}'`, [], 'postgres');
	await pg.sql('SELECT pg_reload_conf()', [], 'postgres');
	await waitFor(
		async () => {
			const [r] = await pg.sql<{ n: string; c: string }>("SELECT current_setting('synchronous_standby_names') AS n, current_setting('synchronous_commit') AS c", [], 'postgres');
			return r.n === names && r.c === commit;
		},
		{ what: `synchronous_standby_names = '${names}', synchronous_commit = ${commit} reloaded`, timeoutMs: 10_000 },
	);
}

async function runCase(c: Case): Promise<Figures> {
	const primary = await startPrivatePostgres({ name: `fo-${c.name}`, binaries: 'system', replication: true, settings: { max_connections: '60' } });
	let standby: PrivatePostgres | undefined;
	const outside = await outsideSystem();
	const endpoint = await writerEndpoint(primary.port);
	const pool = new Pool({ connectionString: `postgres://postgres@127.0.0.1:${endpoint.port}/ledger`, max: 10, connectionTimeoutMillis: 2000 });
	pool.on('error', () => undefined);
	pool.on('connect', (cl) => cl.on('error', () => undefined));
	// Ends every worker loop, also when the case fails midway.
	let stopAll = () => undefined as void;
	try {
		const direct = new Pool({ connectionString: primary.url, max: 1 });
		await migrate(direct, ledgerSchema(SCHEMA), true);
		await direct.end();
		standby = await startStandby(primary, { name: `fo-${c.name}-standby` });
		if (c.synchronousCommit) {
			// Both servers carry it, as a standby made from the primary's configuration does.
			await setReplication(primary, '*', c.synchronousCommit);
			await setReplication(standby, '*', c.synchronousCommit);
			await waitFor(async () => (await primary.sql<{ s: string }>('SELECT sync_state AS s FROM pg_stat_replication', [], 'postgres'))[0]?.s === 'sync', {
				what: 'the standby synchronous (pg_stat_replication.sync_state)',
				timeoutMs: 10_000,
			});
		}

		const confirmed = new Set<string>();
		const tasksAcked = new Set<string>();
		const completedAcked = new Set<string>();
		let stop = false;
		let errors = 0;
		let failingOver = false;
		const failed = () => {
			if (failingOver) errors++;
			return sleep(20); // fixed on purpose: a worker's retry pace after an error (the failover's refusals come at once)
		};

		const ledgerWorker = async (w: number) => {
			for (let n = 0; !stop; n++) {
				const key = `fo:${c.name}:w${w}:${n}`;
				try {
					const [r] = await reserveOperations(pool, ledgerSchema(SCHEMA), [prepareReserveItem(0, { operationKey: key, request: { key }, leaseSeconds: 30 })], { workflowId: 'fo' }, BOUNDS);
					if (r.outcome !== 'proceed') continue;
					const ref = await outside.pay(key, r.idempotencyKey as string);
					const [k] = await confirmOperations(pool, ledgerSchema(SCHEMA), [prepareConfirmItem(0, { operationKey: key, leaseToken: r.leaseToken, outcome: 'succeeded', externalRef: ref })], { workflowId: 'fo' }, BOUNDS);
					if (k.result === 'recorded') confirmed.add(key);
				} catch {
					await failed();
				}
			}
		};
		// The producer and the consumers pace each other by counts, not by time: the producer adds
		// one batch of 5 per consumer poll (so the backlog stays within what the consumers take, up
		// to 15 a round), and an idle consumer waits for the queue's next wake-up.
		/** Enqueue calls that answered. */
		let enqueues = 0;
		/** Dequeue calls the consumers made (answered or failed). */
		let polls = 0;
		const producer = async () => {
			for (let n = 0; !stop; n++) {
				const refs = Array.from({ length: 5 }, (_, i) => `t:${c.name}:${n}:${i}`);
				const pollsBefore = polls;
				try {
					await enqueue(pool, ledgerSchema(SCHEMA), refs.map((ref) => ({ queue: QUEUE, group: 'normal', payload: { ref } })), {}, BOUNDS);
					for (const r of refs) tasksAcked.add(r);
					enqueues++;
					await waitFor(() => stop || polls > pollsBefore, { what: 'a consumer poll since the last enqueue', timeoutMs: 60_000, intervalMs: 1 });
				} catch {
					await failed();
				}
			}
		};
		// Consumers run until the queue is drained (after the producers stopped), not until `stop`.
		let consumersDone = false;
		const consumer = async () => {
			while (!consumersDone) {
				const enqueuesBefore = enqueues;
				try {
					polls++;
					const got = await dequeue(pool, ledgerSchema(SCHEMA), { queue: QUEUE, limit: 5, leaseSeconds: TASK_LEASE_S }, BOUNDS);
					if (got.length === 0) {
						// Idle: instead of spinning on an empty queue (the server the failover runs on), wait
						// for its wake-up: the producer enqueued again, or the time queue_next_due names (a
						// lease of a task claimed before the kill running out, during the drain).
						const due = await nextDue(pool, ledgerSchema(SCHEMA), QUEUE, BOUNDS);
						const wakeAt = due.inMs === null ? Infinity : Date.now() + due.inMs;
						await waitFor(() => consumersDone || enqueues > enqueuesBefore || Date.now() >= wakeAt, { what: 'new work for an idle consumer', timeoutMs: 60_000, intervalMs: 5 });
						continue;
					}
					for (const t of got) await outside.run((t.payload as { ref: string }).ref);
					const res = await complete(pool, ledgerSchema(SCHEMA), got.map((t) => ({ taskId: t.taskId, leaseToken: t.leaseToken })), BOUNDS);
					res.forEach((r, i) => {
						if (r.outcome === 'completed') completedAcked.add((got[i].payload as { ref: string }).ref);
					});
				} catch {
					await failed();
				}
			}
		};
		stopAll = () => {
			stop = true;
			consumersDone = true;
		};
		const workers = [...[0, 1, 2, 3].map(ledgerWorker), producer()];
		const consumers = [consumer(), consumer(), consumer()];

		// At least LOAD_MS, and long enough (at most 4 x LOAD_MS) that a zero below means something
		// on a loaded machine.
		const loadStart = Date.now();
		await waitFor(() => Date.now() - loadStart >= LOAD_MS && confirmed.size >= MIN_CONFIRMED && tasksAcked.size >= MIN_CONFIRMED, {
			what: `${LOAD_MS} ms of load with ${MIN_CONFIRMED} operations confirmed and ${MIN_CONFIRMED} tasks acknowledged`,
			timeoutMs: 4 * LOAD_MS,
			intervalMs: 100,
		});
		if (c.lagMs) {
			// Replication stalls: the primary's WAL sender stops sending (the standby's WAL receiver
			// stopped instead would still find the WAL in its socket buffer after the kill).
			const sender = await waitFor(async () => (await primary.sql<{ pid: number }>("SELECT pid FROM pg_stat_replication WHERE state = 'streaming'", [], 'postgres'))[0]?.pid, {
				what: 'a streaming WAL sender on the primary',
				timeoutMs: 10_000,
			});
			process.kill(sender, 'SIGSTOP');
			await sleep(c.lagMs); // fixed on purpose: the standby's lag (1 s of work behind) is the case under test
		}
		// What the workers were told before the kill is what must survive it.
		failingOver = true;
		const confirmedBefore = new Set(confirmed);
		const completedBefore = new Set(completedAcked);
		primary.kill9();
		standby.promote();
		endpoint.moveTo(standby.port);

		let blockedWriteMs: number | null = null;
		if (c.synchronousCommit) {
			// The promoted standby inherited synchronous_standby_names = '*' and has no standby: a write
			// waits until the client cancels it, and says why.
			const probe = new Pool({ connectionString: standby.url, max: 1 });
			const t0 = Date.now();
			const err = await reserveOperations(probe, ledgerSchema(SCHEMA), [prepareReserveItem(0, { operationKey: `fo:${c.name}:blocked`, request: {}, leaseSeconds: 30 })], {}, BOUNDS).catch((e) => e);
			blockedWriteMs = Date.now() - t0;
			await probe.end();
			expect(err).toBeInstanceOf(ReplicationUnconfirmedError);
			expect(String((err as Error).message)).toMatch(/waiting for synchronous replication was cancelled by the node/);
			// The operator's plan for the new primary without a standby of its own.
			await setReplication(standby, '', c.synchronousCommit);
		}
		// The load runs on against the new primary until every kind of worker got through again.
		const [ops1, tasks1, done1] = [confirmed.size, tasksAcked.size, completedAcked.size];
		await waitFor(() => confirmed.size >= ops1 + 20 && tasksAcked.size >= tasks1 + 20 && completedAcked.size >= done1 + 20, {
			what: '20 operations confirmed, 20 tasks acknowledged and 20 completed on the new primary',
			timeoutMs: 30_000,
			intervalMs: 20,
		});
		failingOver = false;
		stop = true;
		await Promise.all(workers);
		// Drain: every task left (pending, or claimed on the old primary with its lease running out).
		await waitFor(
			async () => (await standby!.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}.queue_tasks WHERE queue = $1 AND status IN ('pending', 'processing')`, [QUEUE]))[0].n === 0,
			{ what: 'the queue drained on the new primary (no pending or processing task)', timeoutMs: 30_000, intervalMs: 100 },
		);
		consumersDone = true;
		await Promise.all(consumers);

		// Count on the new primary.
		const written = [...outside.writes.keys()];
		let grantedTwice = 0;
		let sameIdempotencyKey = 0;
		const counting = new Pool({ connectionString: standby.url, max: 1 });
		try {
			for (let i = 0; i < written.length; i += 500) {
				const chunk = written.slice(i, i + 500);
				const res = await reserveOperations(counting, ledgerSchema(SCHEMA), chunk.map((key, j) => prepareReserveItem(j, { operationKey: key, request: { key }, leaseSeconds: 30 })), {}, BOUNDS);
				const again = res.filter((r) => r.outcome === 'proceed');
				grantedTwice += again.length;
				sameIdempotencyKey += again.filter((r) => r.idempotencyKey === outside.idempotencyKeys.get(chunk[r.index])).length;
			}
		} finally {
			await counting.end();
		}
		const rows = await standby.sql<{ k: string }>(`SELECT operation_key AS k FROM ${SCHEMA}.operations WHERE status = 'succeeded' AND operation_key = ANY($1)`, [[...confirmedBefore]]);
		const confirmedLost = confirmedBefore.size - rows.length;
		const tasksLost = [...tasksAcked].filter((r) => !outside.runs.has(r)).length;
		const tasksRunTwice = [...completedBefore].filter((r) => (outside.runs.get(r) ?? 0) > 1).length;
		const inFlightRerun = [...outside.runs.entries()].filter(([r, n]) => n > 1 && !completedBefore.has(r)).length;
		const doubleWrites = [...outside.writes.values()].filter((n) => n > 1).length;
		expect(doubleWrites).toBe(0); // each worker key is written once by its own worker
		return {
			case: c.name,
			writes: written.length,
			confirmed: confirmedBefore.size,
			grantedTwice,
			sameIdempotencyKey,
			confirmedLost,
			tasksAcked: tasksAcked.size,
			tasksLost,
			tasksRunTwice,
			inFlightRerun,
			blockedWriteMs,
			errorsDuringFailover: errors,
		};
	} finally {
		stopAll();
		await pool.end().catch(() => undefined);
		await endpoint.close();
		await outside.close();
		await standby?.destroy();
		await primary.destroy();
	}
}

const all: Figures[] = [];
afterAll(() => {
	if (all.length) {
		console.log(
			`failover figures (load ${LOAD_MS / 1000} s, 4 ledger workers, 1 producer, 3 consumers):\n` +
				all.map((f) => JSON.stringify(f)).join('\n'),
		);
	}
});

/** Enough load that a zero means something (the load phase waits for MIN_CONFIRMED of each). */
function expectLoad(f: Figures) {
	expect(f.writes).toBeGreaterThanOrEqual(MIN_CONFIRMED);
	expect(f.confirmed).toBeGreaterThanOrEqual(MIN_CONFIRMED);
	expect(f.tasksAcked).toBeGreaterThanOrEqual(MIN_CONFIRMED);
}

describe('failover: primary killed (kill -9), standby promoted', () => {
	it('asynchronous replication (PostgreSQL\'s default): figures recorded, losses allowed', async () => {
		const f = await runCase({ name: 'async' });
		all.push(f);
		expectLoad(f);
	});

	it('asynchronous, the standby 1 s behind (WAL sender stopped): the counters see the loss', async () => {
		const f = await runCase({ name: 'async-lagging', lagMs: 1000 });
		all.push(f);
		expectLoad(f);
		// About a second of acknowledged work is not on the promoted standby.
		expect(f.grantedTwice).toBeGreaterThan(0);
		// The downstream key is derived from the operation key and the attempt: the second grant
		// carries the first write's Idempotency-Key, so a target that honours it stops the duplicate.
		expect(f.sameIdempotencyKey).toBe(f.grantedTwice);
		expect(f.confirmedLost).toBeGreaterThan(0);
		expect(f.tasksLost + f.tasksRunTwice).toBeGreaterThan(0);
	});

	it.each(['on', 'remote_apply'] as const)('synchronous replication, synchronous_commit = %s: nothing granted twice, lost or run twice', async (level) => {
		const f = await runCase({ name: `sync-${level}`, synchronousCommit: level });
		all.push(f);
		expectLoad(f);
		expect(f).toMatchObject({ grantedTwice: 0, confirmedLost: 0, tasksLost: 0, tasksRunTwice: 0 });
		// The inherited synchronous_standby_names = '*' blocked writes until the client's bound.
		expect(f.blockedWriteMs).toBeGreaterThanOrEqual(BOUNDS.statementTimeoutMs + 900);
		expect(f.blockedWriteMs).toBeLessThan(BOUNDS.statementTimeoutMs + 5000);
	});
});
