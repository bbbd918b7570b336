/**
 * Issue 24 in n8n's real engine (n8n-core 2.33.2 WorkflowExecute, the built nodes from dist/),
 * against a real loopback target that does NOT honour Idempotency-Key (test/helpers/fakeTarget.ts):
 * the target's committed writes are what is counted.
 *
 * 1. Guarded HTTP Request × On Error (Stop, Continue (regular output), Continue (using error
 *    output)) × Always Output Data × Retry On Fail × Execute Once × the target answering 201, 422,
 *    429, 504, committing then hanging (the node's deadline), committing then resetting, trickling
 *    an answer past the deadline, plus an invalid item and the ledger's database down. Each case:
 *    at most one committed write per operation key, in this run and when the same workflow runs
 *    again; every item on a result output is what the database holds; Succeeded only for a success
 *    recorded in this run; error items only on Unrecorded or the error output; paired items right.
 * 2. n8n's "Retry (from node with error)" (a new execution, mode retry, resuming the failed run):
 *    - the guarded node failed after sending (its answer could not be recorded): the retry meets
 *      its own lease (In Progress) and sends nothing;
 *    - the separate-node pattern Reserve → write node (On Error: Stop) → Confirm: the retry sends
 *      the write again (the target, which ignores the key, commits twice: why the guarded node
 *      exists), and Confirm sends it To Review as a possible duplicate instead of Succeeded;
 *    - the write node On Error: Continue (using error output), both outputs into Confirm: a failed
 *      Confirm is retried alone and the write is not sent again.
 * 3. The editor: "Execute step" on the guarded node answers from the ledger (Done Before); on the
 *    separate pattern a re-run write is flagged by Confirm; pinned data on the guarded node sends
 *    nothing and lands on Unrecorded.
 */
import net from 'node:net';
import { Client } from 'pg';
import type { INode, INodeExecutionData, IRun } from 'n8n-workflow';
import { closeAllPools as closeSrcPools } from '../../src/db/pool';
import { DATABASE_URL, testDatabase } from '../helpers/db';
import { testCredentials } from '../helpers/fakeExecute';
import { startFakeTarget, type FakeTarget, type TargetMode } from '../helpers/fakeTarget';
import { Engine, PKG, ROOT, connect, node, runError, runPartial, sink, source, type Received } from './harness';

jest.setTimeout(300_000);

type OnError = 'stopWorkflow' | 'continueRegularOutput' | 'continueErrorOutput';
interface Settings {
	onError: OnError;
	alwaysOutputData: boolean;
	retryOnFail: boolean;
	executeOnce: boolean;
}
type Mode = TargetMode | 'invalid' | 'down';

/** The node's outputs, Unrecorded first. */
const OUTPUTS = ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before', 'To Review'];
const O = Object.fromEntries(OUTPUTS.map((n, i) => [n, i])) as Record<string, number>;
const TIMEOUT_MS = 400;

let db: Awaited<ReturnType<typeof testDatabase>>;
let engine: Engine;
let target: FakeTarget;
const OK = { id: 'ok', name: 'ok' };
const DOWN = { id: 'down', name: 'down' };
const FAST_LOCK = { id: 'fastlock', name: 'fastlock' };

async function freePort(): Promise<number> {
	return new Promise((resolve) => {
		const srv = net.createServer();
		srv.listen(0, '127.0.0.1', () => {
			const port = (srv.address() as net.AddressInfo).port;
			srv.close(() => resolve(port));
		});
	});
}

beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_guarded' });
	target = await startFakeTarget();
	const closed = await freePort();
	engine = new Engine({
		credentials: {
			ok: testCredentials(DATABASE_URL, db.schema) as never,
			down: testCredentials(DATABASE_URL.replace(/@[^/]+\//, `@127.0.0.1:${closed}/`), db.schema) as never,
			fastlock: testCredentials(DATABASE_URL, db.schema, { lockTimeoutMs: 300 }) as never,
		},
	});
});
afterAll(async () => {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	await (require(`${ROOT}/dist/src/db/pool.js`) as { closeAllPools(): Promise<void> }).closeAllPools();
	await closeSrcPools();
	await target.close();
	await db.drop();
});

const q = async <T = Record<string, unknown>>(sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows as T[];
const rowOf = async (key: string) => (await q<{ status: string; external_ref: string | null; attempt: number; possible_duplicate_at: Date | null }>(`SELECT * FROM ${db.schemaSql}.operations WHERE operation_key = $1`, [key]))[0];

function guarded(name: string, s: Partial<Settings>, extra: Partial<INode> = {}, params: INode['parameters'] = {}): INode {
	return node(
		name,
		`${PKG}.guardedHttpRequest`,
		{
			keyMode: 'custom',
			operationKey: '={{ $json.k }}',
			method: 'POST',
			url: `${target.url}/payments`,
			authentication: 'none',
			bodyType: 'json',
			jsonBody: '={{ { orderId: $json.k, amount: $json.amount } }}',
			timeoutMs: TIMEOUT_MS,
			leaseSeconds: 30,
			settleSeconds: 5,
			options: {},
			...params,
		},
		{
			credentials: { operationLedgerPostgresApi: OK },
			onError: s.onError ?? 'stopWorkflow',
			alwaysOutputData: s.alwaysOutputData ?? false,
			retryOnFail: s.retryOnFail ?? false,
			maxTries: 2,
			waitBetweenTries: 1,
			executeOnce: s.executeOnce ?? false,
			...extra,
		},
	);
}

/** The sinks behind every output of the node under test (and its error output under Continue (using error output)). */
function wired(ut: INode, srcItems: object[], onError: OnError) {
	const names = [...OUTPUTS];
	if (onError === 'continueErrorOutput') names.push('Error');
	const sinks = names.map((n) => `UT → ${n}`);
	return {
		nodes: [source(srcItems), ut, ...sinks.map(sink)],
		connections: connect({ Source: [['UT']], UT: sinks.map((n) => [n]) }),
		sinks,
		names,
	};
}

const ON_ERROR: OnError[] = ['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput'];
const BOOL = [false, true];
const allSettings: Settings[] = ON_ERROR.flatMap((onError) =>
	BOOL.flatMap((alwaysOutputData) => BOOL.flatMap((retryOnFail) => BOOL.map((executeOnce) => ({ onError, alwaysOutputData, retryOnFail, executeOnce })))),
);
const label = (s: Settings) => `${s.onError}${s.alwaysOutputData ? ' +alwaysOutputData' : ''}${s.retryOnFail ? ' +retryOnFail' : ''}${s.executeOnce ? ' +executeOnce' : ''}`;

/** What a sent item of each target mode is recorded as, and the output it comes out of. */
const SENT: Partial<Record<TargetMode, { status: string; output: string; commits: boolean }>> = {
	'201': { status: 'succeeded', output: 'Succeeded', commits: true },
	'422': { status: 'failed', output: 'Failed', commits: false },
	'429': { status: 'failed', output: 'Failed', commits: false },
	'504': { status: 'unknown', output: 'Unknown', commits: true },
	'commit-then-hang': { status: 'unknown', output: 'Unknown', commits: true },
	'commit-then-reset': { status: 'unknown', output: 'Unknown', commits: true },
	trickle: { status: 'unknown', output: 'Unknown', commits: true },
};

let caseNo = 0;
async function runCase(mode: Mode, s: Settings): Promise<string[]> {
	const problems: string[] = [];
	const id = `g${process.pid}c${++caseNo}`;
	const keys = [`${id}:a`, `${id}:b`];
	const srcItems = [
		{ k: keys[0], amount: 100 },
		{ k: mode === 'invalid' ? '' : keys[1], amount: 200 },
	];
	target.setMode(mode === 'invalid' || mode === 'down' ? '201' : mode);
	const ut = guarded('UT', s, mode === 'down' ? { credentials: { operationLedgerPostgresApi: DOWN } } : {});
	const w = wired(ut, srcItems, s.onError);
	const { run, received } = await engine.run(w.nodes, w.connections);
	const got = (i: number): INodeExecutionData[] => (received as Received)[w.sinks[i]] ?? [];
	const tag = `${mode} ${label(s)}`;
	const check = (ok: boolean, what: string) => {
		if (!ok) problems.push(`${tag}: ${what} (received ${JSON.stringify(Object.fromEntries(w.sinks.map((n, i) => [n, got(i).map((it) => it.json)])))}; error ${runError(run)})`);
	};
	const commits = (k: string) => target.writesWhere('orderId', k).length;

	// The invariant: at most one committed write per operation key.
	for (const k of keys) check(commits(k) <= 1, `${commits(k)} committed writes for ${k}`);

	// Every item on a result output: decided by the database, paired with its own input item.
	for (let o = 1; o < OUTPUTS.length; o++) {
		for (const item of got(o)) {
			check(!('error' in item.json), `error item on ${OUTPUTS[o]}`);
			const ledger = item.json.ledger as { operationKey: string; status: string; sent: boolean; idempotencyKey: string } | undefined;
			check(ledger !== undefined, `item without ledger on ${OUTPUTS[o]}`);
			if (!ledger) continue;
			const paired = (item.pairedItem as { item: number }).item;
			check(srcItems[paired]?.k === ledger.operationKey && item.json.k === ledger.operationKey, `pairedItem ${paired} does not match ${ledger.operationKey}`);
			const row = await rowOf(ledger.operationKey);
			check(row?.status === ledger.status, `${OUTPUTS[o]} says ${ledger.status}, the database ${row?.status}`);
			if (ledger.sent) check(target.requests().some((r) => r.idempotencyKey === ledger.idempotencyKey), `sent: true but the target saw no request with ${ledger.idempotencyKey}`);
			if (o === O.Succeeded) {
				const w0 = target.writesWhere('orderId', ledger.operationKey)[0];
				check(ledger.sent && row.status === 'succeeded' && w0 !== undefined && row.external_ref === w0.id, `Succeeded not a success recorded in this run (${JSON.stringify(row)})`);
				check((item.json.response as { statusCode: number })?.statusCode === 201, 'Succeeded without the 201 answer');
			}
		}
	}
	const errorItems = w.names.flatMap((_, i) => got(i).filter((it) => 'error' in it.json));
	if (s.onError === 'continueErrorOutput') check(errorItems.every((it) => got(w.names.length - 1).includes(it)), 'error items must be on the error output');
	else check(errorItems.every((it) => got(0).includes(it)), 'error items must be on Unrecorded');

	const fails = mode === 'down' || (mode === 'invalid' && !s.executeOnce);
	if (s.onError === 'stopWorkflow') {
		check(fails === (runError(run) !== undefined), `run error expected: ${fails}`);
		if (fails) {
			check(w.names.every((_, i) => got(i).length === 0), 'nothing may leave a node that stopped the workflow');
			check(keys.every((k) => commits(k) === 0), 'a batch refused before sending sent something');
		}
	} else {
		check(runError(run) === undefined, 'the run must not fail under Continue');
		if (fails) check(errorItems.length > 0, 'error items expected');
	}
	if (mode === 'down') check(target.requests().every((r) => !keys.some((k) => (r.body as { orderId?: string } | null)?.orderId === k)), 'the database was down, yet a request was sent');

	const sentSpec = SENT[mode as TargetMode];
	if (sentSpec && !fails) {
		const expectKeys = s.executeOnce ? [keys[0]] : keys;
		for (const k of expectKeys) {
			if (sentSpec.commits) check(commits(k) === 1, `expected one committed write for ${k}, got ${commits(k)}`);
			check((await rowOf(k))?.status === sentSpec.status, `${k}: expected ${sentSpec.status}, the database holds ${(await rowOf(k))?.status}`);
			check(got(O[sentSpec.output]).some((it) => (it.json.ledger as { operationKey: string }).operationKey === k), `${k} did not come out of ${sentSpec.output}`);
		}
		if (s.executeOnce) check((await rowOf(keys[1])) === undefined, 'Execute Once: the second item was reserved');
	}

	// Again, as a resent webhook or a second run would: nothing committed again for any key.
	if (!fails) {
		target.setMode('201');
		const before = target.requests().length;
		const validItems = srcItems.filter((it) => it.k !== '');
		const w2 = wired(guarded('UT', {}), validItems, 'stopWorkflow');
		const again = await engine.run(w2.nodes, w2.connections);
		check(runError(again.run) === undefined, `the second run failed: ${runError(again.run)}`);
		for (const k of keys) {
			const retryable = mode === '429';
			if (!retryable) check(commits(k) <= 1, `${commits(k)} committed writes for ${k} after running again`);
		}
		const newRequests = target.requests().slice(before);
		// A retryable refusal may be sent again (attempt 2), and so may what the first run never
		// reserved (Execute Once's second item, the invalid item's neighbour under Continue).
		const allowed = mode === '429' || s.executeOnce || mode === 'invalid' ? 'some' : 'none';
		if (allowed === 'none') check(newRequests.length === 0, `running again sent ${newRequests.length} request(s)`);
	}
	return problems;
}

describe('Guarded HTTP Request in n8n-core WorkflowExecute: every On Error × Always Output Data × Retry On Fail × Execute Once', () => {
	const modes: Mode[] = ['201', '422', '429', '504', 'commit-then-hang', 'commit-then-reset', 'trickle', 'invalid', 'down'];
	for (const mode of modes) {
		test(`target ${mode}`, async () => {
			const problems: string[] = [];
			for (const s of allSettings) problems.push(...(await runCase(mode, s)));
			expect(problems).toEqual([]);
		});
	}
});

describe('what each answer is recorded as', () => {
	const run1 = async (mode: TargetMode, key: string, params: INode['parameters'] = {}) => {
		target.setMode(mode);
		const w = wired(guarded('UT', {}, {}, params), [{ k: key, amount: 5 }], 'stopWorkflow');
		const { run, received } = await engine.run(w.nodes, w.connections);
		expect(runError(run)).toBeUndefined();
		const at = w.sinks.findIndex((n) => (received[n] ?? []).length > 0);
		return { output: OUTPUTS[at], item: received[w.sinks[at]][0].json as { ledger: Record<string, unknown>; response: Record<string, unknown> | null } };
	};

	test('201: Succeeded with the answer and the reference; running again: Done Before with the stored answer, nothing sent', async () => {
		const key = `g${process.pid}:rec:201`;
		const first = await run1('201', key);
		expect(first.output).toBe('Succeeded');
		const write = target.writesWhere('orderId', key)[0];
		expect(write.idempotencyKey).toBe(first.item.ledger.idempotencyKey);
		expect(first.item.ledger).toMatchObject({ outcome: 'succeeded', sent: true, status: 'succeeded', externalRef: write.id, statusCode: 201 });
		expect(first.item.response).toEqual({ statusCode: 201, body: { id: write.id, status: 'succeeded', orderId: key, amount: 5 } });
		const again = await run1('201', key);
		expect(again.output).toBe('Done Before');
		expect(again.item.ledger).toMatchObject({ outcome: 'already_succeeded', sent: false, replay: true, externalRef: write.id });
		expect(again.item.response).toEqual(first.item.response);
		expect(target.writesWhere('orderId', key)).toHaveLength(1);
	});

	test('422: Failed, not retryable; running again: Failed Before, nothing sent', async () => {
		const key = `g${process.pid}:rec:422`;
		const first = await run1('422', key);
		expect(first.output).toBe('Failed');
		expect(first.item.ledger).toMatchObject({ outcome: 'failed', retryable: false, statusCode: 422, reason: expect.stringMatching(/^HTTP 422/) });
		const before = target.requests().length;
		expect((await run1('201', key)).output).toBe('Failed Before');
		expect(target.requests().length).toBe(before);
	});

	test('429: Failed, retryable; running again proceeds as attempt 2 with a new idempotency key', async () => {
		const key = `g${process.pid}:rec:429`;
		const first = await run1('429', key);
		expect(first.item.ledger).toMatchObject({ outcome: 'failed', retryable: true });
		const second = await run1('201', key);
		expect(second.output).toBe('Succeeded');
		expect(second.item.ledger.attempt).toBe(2);
		expect(second.item.ledger.idempotencyKey).not.toBe(first.item.ledger.idempotencyKey);
		expect(target.writesWhere('orderId', key)).toHaveLength(1);
	});

	test.each([
		['504', /^HTTP 504/],
		['commit-then-hang', /No complete answer within the timeout \(400 ms\)/],
		['commit-then-reset', /may have reached the target|socket hang up|ECONNRESET|connection reset/i],
		['trickle', /No complete answer within the timeout \(400 ms\)/],
	] as const)('%s: Unknown, with what to run next; running again: Reconcile, nothing sent', async (mode, reason) => {
		const key = `g${process.pid}:rec:${mode}`;
		const t0 = Date.now();
		const first = await run1(mode, key);
		expect(Date.now() - t0).toBeLessThan(TIMEOUT_MS + 3000);
		expect(first.output).toBe('Unknown');
		expect(first.item.ledger).toMatchObject({ outcome: 'unknown', sent: true, status: 'unknown', reason: expect.stringMatching(reason) });
		expect(first.item.ledger.nextStep).toMatch(/run the reconcile workflow/);
		const before = target.requests().length;
		const again = await run1('201', key);
		expect(again.output).toBe('Reconcile');
		expect(again.item.ledger.nextStep).toMatch(/Do not send it again and do not use n8n's Retry/);
		expect(target.requests().length).toBe(before);
		expect(target.writesWhere('orderId', key)).toHaveLength(1);
	});

	test('connection refused: Failed, retryable (never reached the target)', async () => {
		const key = `g${process.pid}:rec:refused`;
		const closed = await freePort();
		const first = await run1('201', key, { url: `http://127.0.0.1:${closed}/payments` });
		expect(first.output).toBe('Failed');
		expect(first.item.ledger).toMatchObject({ retryable: true, reason: expect.stringMatching(/^Not delivered/) });
	});

	test('the same key with a different amount: Conflict, nothing sent', async () => {
		const key = `g${process.pid}:rec:conflict`;
		await run1('201', key);
		const before = target.requests().length;
		target.setMode('201');
		const w = wired(guarded('UT', {}), [{ k: key, amount: 999 }], 'stopWorkflow');
		const { received } = await engine.run(w.nodes, w.connections);
		expect(received['UT → Conflict']).toHaveLength(1);
		expect(target.requests().length).toBe(before);
	});

	test('bad input is refused before anything is reserved or sent: a URL with a password, a lease shorter than the timeout, a header set twice', async () => {
		const cases: Array<[INode['parameters'], RegExp]> = [
			[{ url: 'http://user:secret@127.0.0.1/x' }, /user name or password/],
			[{ leaseSeconds: 1 }, /must outlast the timeout/],
			[{ sendHeaders: true, headerParameters: { parameters: [{ name: 'X-A', value: '1' }, { name: 'x-a', value: '2' }] } }, /given twice/],
			[{ sendHeaders: true, headerParameters: { parameters: [{ name: 'Idempotency-Key', value: 'mine' }] } }, /idempotency key's header/],
			[{ jsonBody: '' }, /JSON body is empty/],
		];
		for (const [params, message] of cases) {
			const key = `g${process.pid}:bad:${caseNo++}`;
			const before = target.requests().length;
			const w = wired(guarded('UT', {}, {}, params), [{ k: key, amount: 1 }], 'stopWorkflow');
			const { run } = await engine.run(w.nodes, w.connections);
			expect(runError(run)).toMatch(message);
			expect(await rowOf(key)).toBeUndefined();
			expect(target.requests().length).toBe(before);
		}
	});
});

/**
 * Takes a row lock on `key` from another session once the target committed its write (before it
 * answers), and holds it until `release()`: the test lets go once the run that had to give up on
 * the lock has ended, not after a fixed time. `release()` fails when the lock was never taken.
 */
function lockWhileAnswering(key: string): { release(): Promise<void> } {
	let holder: Client | undefined;
	target.beforeAnswer = async () => {
		target.beforeAnswer = null;
		const c = new Client({ connectionString: DATABASE_URL });
		await c.connect();
		await c.query('BEGIN');
		await c.query(`SELECT 1 FROM ${db.schemaSql}.operations WHERE operation_key = $1 FOR UPDATE`, [key]);
		holder = c;
	};
	return {
		async release() {
			if (!holder) throw new Error(`the lock on ${key} was never taken (the target did not answer)`);
			await holder.query('COMMIT').catch(() => undefined);
			await holder.end();
		},
	};
}

describe("n8n's Retry (from node with error): a new execution resuming the failed one", () => {
	test('the guarded node failed after sending (its answer could not be recorded): the retry answers In Progress and sends nothing', async () => {
		const key = `g${process.pid}:retry:guarded`;
		target.setMode('201');
		const lock = lockWhileAnswering(key);
		const ut = guarded('UT', {}, { credentials: { operationLedgerPostgresApi: FAST_LOCK } });
		const w = wired(ut, [{ k: key, amount: 7 }], 'stopWorkflow');
		const failed = await engine.run(w.nodes, w.connections);
		expect(runError(failed.run)).toMatch(/were sent but their answers could not be recorded/);
		expect(failed.run.data.resultData.lastNodeExecuted).toBe('UT');
		expect(target.writesWhere('orderId', key)).toHaveLength(1);
		await lock.release(); // the lock that kept the answer from being recorded is gone

		const retried = await engine.retry(w.nodes, w.connections, failed.run);
		expect(runError(retried.run)).toBeUndefined();
		expect(retried.received['UT → In Progress']).toHaveLength(1);
		const item = retried.received['UT → In Progress'][0].json.ledger as Record<string, unknown>;
		expect(item).toMatchObject({ outcome: 'in_progress', sent: false });
		expect(item.nextStep).toMatch(/wait until the lease has ended/);
		expect(target.writesWhere('orderId', key)).toHaveLength(1);
		// Source did not run again: the retry resumed at the failed node.
		expect(retried.run.data.resultData.runData['Source']).toHaveLength(1);
	});

	const separate = (key: string, writerOnError: OnError) => {
		const nodes = [
			source([{ k: key, amount: 9 }]),
			node('Reserve', `${PKG}.reserveOperation`, { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 'payments', requestSource: 'input', leaseSeconds: 300 }, { typeVersion: 1, credentials: { operationLedgerPostgresApi: OK } }),
			node('Write', 'test.writer', { url: `${target.url}/payments` }, { onError: writerOnError }),
			node('Confirm', `${PKG}.confirmOperation`, { outcomeSource: 'httpResult', externalReference: '={{ $json.id }}', lineage: 'auto', options: {} }, { typeVersion: 1, credentials: { operationLedgerPostgresApi: FAST_LOCK } }),
			...['Succeeded', 'Failed', 'Unknown', 'Stale', 'To Review'].map(sink),
		];
		const writeOuts = writerOnError === 'continueErrorOutput' ? [['Confirm'], ['Confirm']] : [['Confirm']];
		const connections = connect({ Source: [['Reserve']], Reserve: [[], ['Write']], Write: writeOuts, Confirm: [[], ['Succeeded'], ['Failed'], ['Unknown'], ['Stale'], ['To Review']] });
		return { nodes, connections };
	};

	test('Reserve → write node (On Error: Stop) → Confirm: the retry sends the write again, and Confirm sends it To Review as a possible duplicate, not Succeeded', async () => {
		const key = `g${process.pid}:retry:separate`;
		const writes = () => target.writesWhere('k', key);
		const w = separate(key, 'stopWorkflow');
		target.setModes(['504']);
		const failed = await engine.run(w.nodes, w.connections);
		expect(failed.run.data.resultData.lastNodeExecuted).toBe('Write');
		expect(runError(failed.run)).toBeDefined();
		expect(writes()).toHaveLength(1);

		const retried = await engine.retry(w.nodes, w.connections, failed.run);
		expect(runError(retried.run)).toBeUndefined();
		// The write node ran again on Reserve's stored Proceed item: a target that ignores the key committed twice.
		expect(writes()).toHaveLength(2);
		expect(retried.received['Succeeded']).toBeUndefined();
		expect(retried.received['To Review']).toHaveLength(1);
		const ledger = retried.received['To Review'][0].json.ledger as Record<string, unknown>;
		expect(ledger).toMatchObject({ status: 'review', possibleDuplicate: true, result: 'recorded' });
		expect(ledger.nextStep).toMatch(/more than once/);
		const row = await rowOf(key);
		expect(row.status).toBe('review');
		expect(row.possible_duplicate_at).not.toBeNull();
		const ev = await q<{ event: string; execution_id: string; detail: { executionMode: string; leaseExecutionId: string } }>(
			`SELECT event, execution_id, detail FROM ${db.schemaSql}.operation_events WHERE operation_key = $1 AND event = 'possible_duplicate'`,
			[key],
		);
		expect(ev).toEqual([expect.objectContaining({ execution_id: retried.executionId, detail: expect.objectContaining({ executionMode: 'retry' }) })]);
	});

	test('the write node On Error: Continue (using error output), both outputs into Confirm: a failed Confirm is retried alone; the write is not sent again', async () => {
		const key = `g${process.pid}:retry:continue`;
		const writes = () => target.writesWhere('k', key);
		const w = separate(key, 'continueErrorOutput');
		target.setModes(['504']);
		const lock = lockWhileAnswering(key);
		const failed = await engine.run(w.nodes, w.connections);
		expect(failed.run.data.resultData.lastNodeExecuted).toBe('Confirm');
		expect(runError(failed.run)).toMatch(/stayed locked/);
		await lock.release();
		const retried = await engine.retry(w.nodes, w.connections, failed.run);
		expect(runError(retried.run)).toBeUndefined();
		expect(writes()).toHaveLength(1);
		expect(retried.received['Unknown']).toHaveLength(1);
		expect((await rowOf(key)).status).toBe('unknown');
		// The write node did not run in the retry.
		expect(retried.run.data.resultData.runData['Write']).toHaveLength(1);
	});
});

describe('the editor', () => {
	test('Execute step on the guarded node after a run: Done Before from the ledger, nothing sent', async () => {
		const key = `g${process.pid}:editor:step`;
		target.setMode('201');
		const w = wired(guarded('UT', {}), [{ k: key, amount: 3 }], 'stopWorkflow');
		const first = await engine.run(w.nodes, w.connections, { mode: 'manual' });
		expect(first.received['UT → Succeeded']).toHaveLength(1);
		const again = await runPartial(engine, w.nodes, w.connections, first.run, 'UT', ['UT']);
		const out = again.run.data.resultData.runData['UT'].at(-1)!.data!.main;
		expect(out[O['Done Before']]).toHaveLength(1);
		expect(target.writesWhere('orderId', key)).toHaveLength(1);
	});

	test('Execute step on a node after the guarded node reuses its stored output: nothing sent', async () => {
		const key = `g${process.pid}:editor:after`;
		target.setMode('201');
		const w = wired(guarded('UT', {}), [{ k: key, amount: 3 }], 'stopWorkflow');
		const first = await engine.run(w.nodes, w.connections, { mode: 'manual' });
		const before = target.requests().length;
		const again = await runPartial(engine, w.nodes, w.connections, first.run, 'UT → Succeeded');
		expect(again.run.data.resultData.runData['UT']).toHaveLength(1);
		expect(target.requests().length).toBe(before);
	});

	test('Execute step on the separate write node after a run that failed there: the write is sent again and Confirm flags it To Review', async () => {
		const key = `g${process.pid}:editor:separate`;
		const writes = () => target.writesWhere('k', key);
		const nodes = [
			source([{ k: key, amount: 4 }]),
			node('Reserve', `${PKG}.reserveOperation`, { keyMode: 'custom', operationKey: '={{ $json.k }}', target: 'payments', leaseSeconds: 300 }, { typeVersion: 1, credentials: { operationLedgerPostgresApi: OK } }),
			node('Write', 'test.writer', { url: `${target.url}/payments` }),
			node('Confirm', `${PKG}.confirmOperation`, { outcomeSource: 'httpResult', externalReference: '={{ $json.id }}', lineage: 'auto', options: {} }, { typeVersion: 1, credentials: { operationLedgerPostgresApi: OK } }),
			...['Succeeded', 'To Review'].map(sink),
		];
		const connections = connect({ Source: [['Reserve']], Reserve: [[], ['Write']], Write: [['Confirm']], Confirm: [[], ['Succeeded'], [], [], [], ['To Review']] });
		target.setModes(['504']);
		const first = await engine.run(nodes, connections, { mode: 'manual' });
		expect(runError(first.run)).toBeDefined();
		target.setMode('201');
		const again = await runPartial(engine, nodes, connections, first.run, 'Confirm', ['Write']);
		expect(writes()).toHaveLength(2);
		// The partial run stops at its destination, Confirm: read Confirm's outputs.
		const out = again.run.data.resultData.runData['Confirm'].at(-1)!.data!.main;
		expect(out[1]).toEqual([]);
		expect(out[5]).toHaveLength(1);
		expect(out[5]![0].json.ledger).toMatchObject({ status: 'review', possibleDuplicate: true });
	});

	test('pinned data on the guarded node: nothing sent, the pinned item on Unrecorded (n8n replays pins on output 0)', async () => {
		const key = `g${process.pid}:editor:pinned`;
		const before = target.requests().length;
		const w = wired(guarded('UT', {}), [{ k: key, amount: 3 }], 'stopWorkflow');
		const { run, received } = await engine.run(w.nodes, w.connections, {
			mode: 'manual',
			pinData: { UT: [{ json: { k: key, ledger: { outcome: 'succeeded', sent: true } } }] },
		});
		expect(runError(run)).toBeUndefined();
		expect(received['UT → Unrecorded']).toHaveLength(1);
		expect(received['UT → Succeeded']).toBeUndefined();
		expect(target.requests().length).toBe(before);
		expect(await rowOf(key)).toBeUndefined();
	});
});

export type { IRun };
