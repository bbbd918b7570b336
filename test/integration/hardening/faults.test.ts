/**
 * Case 1: database faults in the middle of a batch, on a private Postgres.
 *
 * For each batch step (Reserve, Confirm, Reconcile claim, Reconcile resolve, Dequeue) and each
 * fault (pg_terminate_backend of the node's own backend; pg_ctl stop -m fast + start; pg_ctl stop
 * -m immediate + start), a slow row trigger (5 ms per row) makes the node's one statement run for
 * about a second; the fault is applied once pg_stat_activity shows that statement active for
 * 300 ms (so rows of the batch were already written inside its transaction). Then:
 *   - the node fails with an error naming the step, the number of items not recorded, and the
 *     lost connection (or, under continueOnFail, one paired error item per input item). After an
 *     immediate stop (a crash: the server sends no FATAL, so the client cannot tell whether the
 *     COMMIT of its one round trip ran) the error says the batch may have been recorded, or not,
 *     and that running it again is safe; it says nothing was recorded only when the
 *     server's FATAL proves the COMMIT had not started;
 *   - nothing of the batch is in the database (rows, events, claims, scheduler unchanged);
 *   - in the same process, with the same credential (same pool), the next execution succeeds and
 *     every outcome it reports is true in the database.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { Pool } from 'pg';
import { closeAllPools } from '../../../src/db/pool';
import { migrate } from '../../../src/db/migrate';
import { testCredentials } from '../../helpers/fakeExecute';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';
import { waitFor } from '../../helpers/wait';
import { claim, confirm, dequeue, enqueue, reserve, resolve, settle, type Creds } from './run';
import { createHash } from 'node:crypto';

/** What the ledger stores of a token: SHA-256 over its 16 bytes, hex. */
const tokenHash = (t: string) => createHash('sha256').update(Buffer.from(t.replace(/-/g, ''), 'hex')).digest('hex');

jest.setTimeout(120_000);

const APP = 'n8n-nodes-operation-ledger';
const SCHEMA = 'hz_faults';
const N = 150;
let pg: PrivatePostgres;
let admin: Pool;
let creds: Creds;

beforeAll(async () => {
	pg = await startPrivatePostgres({ name: 'faults' });
	admin = new Pool({ connectionString: pg.url, max: 2 });
	admin.on('error', () => undefined);
	await migrate(admin, ledgerSchema(SCHEMA), true);
	await admin.query(`
		CREATE TABLE public.fault_delay (ms integer NOT NULL);
		INSERT INTO public.fault_delay VALUES (0);
		CREATE FUNCTION public.fault_slow() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE d integer;
		BEGIN
			SELECT ms INTO d FROM public.fault_delay;
			IF d > 0 THEN PERFORM pg_sleep(d / 1000.0); END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER fault_slow BEFORE INSERT OR UPDATE ON "${SCHEMA}".operations FOR EACH ROW EXECUTE FUNCTION public.fault_slow();
		CREATE TRIGGER fault_slow BEFORE UPDATE ON "${SCHEMA}".queue_tasks FOR EACH ROW EXECUTE FUNCTION public.fault_slow();
	`);
	await admin.end();
	creds = testCredentials(pg.url, SCHEMA, { maxConnections: 3, autoApplySchema: false });
});

afterAll(async () => {
	await closeAllPools();
	await pg?.destroy();
});

const setDelay = (ms: number) => pg.sql('UPDATE public.fault_delay SET ms = $1', [ms]);
const q = <T = Record<string, unknown>>(text: string, values: unknown[] = []) => pg.sql<T>(text, values);

type Fault = 'terminate' | 'restart-fast' | 'restart-immediate';
const FAULTS: Fault[] = ['terminate', 'restart-fast', 'restart-immediate'];

/**
 * Waits until the node's statement calling `fnName` has been active for 300 ms, then applies the
 * fault. Only our own backend (our application_name, on our private server) is terminated.
 */
async function faultMidStatement(fnName: string, fault: Fault): Promise<{ pid: number; ranMs: number }> {
	const running = await waitFor(
		async () => {
			const rows = await q<{ pid: number; ms: number }>(
				`SELECT pid, (extract(epoch FROM clock_timestamp() - query_start) * 1000)::int AS ms
				   FROM pg_stat_activity
				  WHERE application_name = $1 AND state = 'active' AND query LIKE $2 AND pid <> pg_backend_pid()`,
				[APP, `%${fnName}%`],
			);
			return rows.length === 1 && rows[0].ms >= 300 && rows[0];
		},
		{ what: `the node's ${fnName} statement running for 300 ms`, timeoutMs: 20_000 },
	);
	if (fault === 'terminate') {
		const [t] = await q<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [running.pid]);
		expect(t.ok).toBe(true);
	} else {
		pg.restart(fault === 'restart-fast' ? 'fast' : 'immediate');
	}
	return { pid: running.pid, ranMs: running.ms };
}

/** Runs `step` while applying the fault mid-statement; returns the node's settled result. */
async function withFault<T>(fnName: string, fault: Fault, step: () => Promise<T>) {
	await setDelay(5);
	const running = settle(step());
	const seen = await faultMidStatement(fnName, fault);
	const result = await running;
	await setDelay(0);
	return { result, seen };
}

/**
 * Asserts the node failed, saying what was not recorded (thrown, or one error item per input on
 * Unrecorded); after a crash (no FATAL from the server), that the batch may have been recorded and
 * running it again is safe.
 */
function expectNotRecorded(
	result: Awaited<ReturnType<typeof withFault>>['result'],
	what: string,
	n: number,
	continueOnFail: boolean,
	fault: Fault,
) {
	const name = what.replace(/[()]/g, '\\$&');
	const unknown = fault === 'restart-immediate';
	const pattern = unknown
		? new RegExp(`^${name} may have been recorded, or not \\(${n} item\\(s\\)\\): the database connection was lost while the batch's COMMIT was on its way`)
		: new RegExp(`^${name} failed and nothing of this batch was recorded \\(${n} item\\(s\\)\\): the database connection failed: `);
	if (continueOnFail) {
		expect(result.ok).toBe(true);
		const out = (result as { value: Array<Array<{ json: { error?: string }; pairedItem?: unknown }>> }).value;
		expect(out[0]).toHaveLength(n);
		out[0].forEach((it, i) => {
			expect(it.json.error).toMatch(pattern);
			expect(it.pairedItem).toEqual({ item: i });
		});
		for (const o of out.slice(1)) expect(o).toHaveLength(0);
	} else {
		expect(result.ok).toBe(false);
		const err = (result as { error: Error & { description?: string } }).error;
		expect(err.message).toMatch(pattern);
		expect(err.description).toMatch(unknown ? /^Running the execution again is safe/ : /one database transaction/);
	}
}

const keysOf = (prefix: string, n = N) => Array.from({ length: n }, (_, i) => `${prefix}:${String(i).padStart(4, '0')}`);
async function counts(prefix: string) {
	const [r] = await q<{ ops: number; events: number }>(
		`SELECT (SELECT count(*)::int FROM "${SCHEMA}".operations WHERE operation_key LIKE $1) AS ops,
		        (SELECT count(*)::int FROM "${SCHEMA}".operation_events WHERE operation_key LIKE $1) AS events`,
		[`${prefix}:%`],
	);
	return r;
}

const summary: string[] = [];
afterAll(() => {
	if (summary.length) console.log(`fault summary:\n${summary.join('\n')}`);
});

describe.each(FAULTS)('fault "%s" in the middle of a batch', (fault) => {
	const cof = fault === 'restart-fast'; // one fault per step also runs under continueOnFail

	it('Reserve: fails naming what was not recorded, writes nothing, next execution proceeds', async () => {
		const prefix = `res-${fault}`;
		const keys = keysOf(prefix);
		const { result, seen } = await withFault('reserve_operations', fault, () => reserve(creds, keys, {}, { continueOnFail: cof }));
		summary.push(`reserve   ${fault}: statement ran ${seen.ranMs} ms before the fault`);
		expectNotRecorded(result, 'Reserve Operation', N, cof, fault);
		expect(await counts(prefix)).toEqual({ ops: 0, events: 0 });

		const out = await reserve(creds, keys);
		expect(out[1]).toHaveLength(N);
		// The row keeps only the SHA-256 of the lease token (migration 0005).
		const rows = await q<{ operation_key: string; status: string; lease_token: string }>(
			`SELECT operation_key, status, encode(lease_token_hash, 'hex') AS lease_token FROM "${SCHEMA}".operations WHERE operation_key LIKE $1`,
			[`${prefix}:%`],
		);
		const byKey = new Map(rows.map((r) => [r.operation_key, r]));
		for (const it of out[1]) {
			const l = it.json.ledger as { operationKey: string; leaseToken: string; outcome: string };
			expect(l.outcome).toBe('proceed');
			expect(byKey.get(l.operationKey)).toEqual({ operation_key: l.operationKey, status: 'reserved', lease_token: tokenHash(l.leaseToken) });
		}
		expect(await counts(prefix)).toEqual({ ops: N, events: N });
	});

	it('Confirm: fails naming what was not recorded, writes nothing, next execution confirms', async () => {
		const prefix = `con-${fault}`;
		const reserved = (await reserve(creds, keysOf(prefix)))[1].map((it) => it.json.ledger as { operationKey: string; leaseToken: string });
		const rows = reserved.map((l, i) => ({ key: l.operationKey, token: l.leaseToken, ref: `pay-${i}` }));
		const { result, seen } = await withFault('confirm_operations', fault, () => confirm(creds, rows, {}, { continueOnFail: cof }));
		summary.push(`confirm   ${fault}: statement ran ${seen.ranMs} ms before the fault`);
		expectNotRecorded(result, 'Confirm Operation', N, cof, fault);
		const st = await q<{ status: string; n: number; refs: number }>(
			`SELECT status, count(*)::int AS n, count(external_ref)::int AS refs FROM "${SCHEMA}".operations WHERE operation_key LIKE $1 GROUP BY status`,
			[`${prefix}:%`],
		);
		expect(st).toEqual([{ status: 'reserved', n: N, refs: 0 }]);
		expect(await counts(prefix)).toEqual({ ops: N, events: N });

		const out = await confirm(creds, rows);
		expect(out[1]).toHaveLength(N);
		const done = await q<{ operation_key: string; external_ref: string }>(
			`SELECT operation_key, external_ref FROM "${SCHEMA}".operations WHERE operation_key LIKE $1 AND status = 'succeeded'`,
			[`${prefix}:%`],
		);
		const refs = new Map(done.map((r) => [r.operation_key, r.external_ref]));
		for (const it of out[1]) {
			const l = it.json.ledger as { operationKey: string; status: string; result: string; externalRef: string };
			expect(l).toMatchObject({ status: 'succeeded', result: 'recorded' });
			expect(refs.get(l.operationKey)).toBe(l.externalRef);
		}
		expect(await counts(prefix)).toEqual({ ops: N, events: 2 * N });
	});

	async function makeUnknown(prefix: string) {
		const target = `t-${prefix}`;
		const reserved = (await reserve(creds, keysOf(prefix), { target }))[1].map((it) => it.json.ledger as { operationKey: string; leaseToken: string });
		await confirm(creds, reserved.map((l) => ({ key: l.operationKey, token: l.leaseToken, outcome: 'unknown', reason: 'timeout' })));
		// Their settle windows have passed (migration 0005 stores one per operation).
		await q(`UPDATE "${SCHEMA}".operations SET settle_until = settle_until - interval '1 day' WHERE operation_key LIKE $1`, [`${prefix}:%`]);
		return target;
	}

	it('Reconcile claim: fails naming what was not recorded, claims nothing, next execution claims all', async () => {
		const prefix = `clm-${fault}`;
		const target = await makeUnknown(prefix);
		const before = await counts(prefix);
		const { result, seen } = await withFault('reconcile_claim', fault, () =>
			claim(creds, { target, batchSize: N }, { continueOnFail: cof }),
		);
		summary.push(`claim     ${fault}: statement ran ${seen.ranMs} ms before the fault`);
		expectNotRecorded(result, 'Reconcile Unknown (claim)', 1, cof, fault);
		const [c] = await q<{ claimed: number; unknown: number }>(
			`SELECT count(claim_token_hash)::int AS claimed, count(*) FILTER (WHERE status = 'unknown')::int AS unknown FROM "${SCHEMA}".operations WHERE operation_key LIKE $1`,
			[`${prefix}:%`],
		);
		expect(c).toEqual({ claimed: 0, unknown: N });
		expect(await counts(prefix)).toEqual(before);

		const out = await claim(creds, { target, batchSize: N });
		expect(out[1]).toHaveLength(N);
		const tokens = await q<{ operation_key: string; claim_token: string }>(
			`SELECT operation_key, encode(claim_token_hash, 'hex') AS claim_token FROM "${SCHEMA}".operations WHERE operation_key LIKE $1`,
			[`${prefix}:%`],
		);
		const byKey = new Map(tokens.map((r) => [r.operation_key, r.claim_token]));
		for (const it of out[1]) {
			const r = it.json.reconcile as { operationKey: string; claimToken: string };
			expect(byKey.get(r.operationKey)).toBe(tokenHash(r.claimToken));
		}
	});

	it('Reconcile resolve: fails naming what was not recorded, resolves nothing, next execution resolves', async () => {
		const prefix = `rsv-${fault}`;
		const target = await makeUnknown(prefix);
		const claimed = (await claim(creds, { target, batchSize: N }))[1].map((it) => it.json.reconcile as { operationKey: string; claimToken: string });
		expect(claimed).toHaveLength(N);
		const before = await counts(prefix);
		const rows = claimed.map((c, i) => ({ key: c.operationKey, claimToken: c.claimToken, ref: `found-${i}` }));
		const { result, seen } = await withFault('reconcile_resolve', fault, () => resolve(creds, rows, {}, { continueOnFail: cof }));
		summary.push(`resolve   ${fault}: statement ran ${seen.ranMs} ms before the fault`);
		expectNotRecorded(result, 'Reconcile Unknown (resolve)', N, cof, fault);
		const [s] = await q<{ unknown: number; refs: number; checks: number }>(
			`SELECT count(*) FILTER (WHERE status = 'unknown')::int AS unknown, count(external_ref)::int AS refs, sum(reconcile_checks)::int AS checks
			   FROM "${SCHEMA}".operations WHERE operation_key LIKE $1`,
			[`${prefix}:%`],
		);
		expect(s).toEqual({ unknown: N, refs: 0, checks: 0 });
		expect(await counts(prefix)).toEqual(before);

		const out = await resolve(creds, rows);
		// Output 2 is Succeeded (happened): 0 Unrecorded, 1 To Check (Claim's).
		expect(out[2]).toHaveLength(N);
		const done = await q<{ operation_key: string; external_ref: string }>(
			`SELECT operation_key, external_ref FROM "${SCHEMA}".operations WHERE operation_key LIKE $1 AND status = 'succeeded'`,
			[`${prefix}:%`],
		);
		expect(done).toHaveLength(N);
		const refs = new Map(done.map((r) => [r.operation_key, r.external_ref]));
		for (const it of out[2]) {
			const r = it.json.reconcile as { operationKey: string; result: string; externalRef: string };
			expect(r.result).toBe('succeeded');
			expect(refs.get(r.operationKey)).toBe(r.externalRef);
		}
	});

	it('Dequeue: fails naming what was not recorded, claims no task, next execution claims them', async () => {
		const queue = `q-${fault}`;
		const enq = await enqueue(creds, queue, Array.from({ length: N }, (_, i) => ({ i })));
		expect(enq[1]).toHaveLength(N);
		const { result, seen } = await withFault('queue_claim', fault, () => dequeue(creds, queue, N, {}, { continueOnFail: cof }));
		summary.push(`dequeue   ${fault}: statement ran ${seen.ranMs} ms before the fault`);
		expectNotRecorded(result, 'Dequeue', 1, cof, fault);
		const [t] = await q<{ pending: number; attempts: number; tokens: number }>(
			`SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, sum(attempts)::int AS attempts, count(lease_token)::int AS tokens
			   FROM "${SCHEMA}".queue_tasks WHERE queue = $1`,
			[queue],
		);
		expect(t).toEqual({ pending: N, attempts: 0, tokens: 0 });
		const sched = await q<{ claims: string }>(`SELECT claims::text FROM "${SCHEMA}".queue_scheduler WHERE queue = $1`, [queue]);
		expect(sched.map((r) => r.claims).filter((c) => c !== '0')).toEqual([]);

		const out = await dequeue(creds, queue, N);
		expect(out[1]).toHaveLength(N);
		const live = await q<{ id: string; lease_token: string }>(
			`SELECT id::text, lease_token::text FROM "${SCHEMA}".queue_tasks WHERE queue = $1 AND status = 'processing' AND attempts = 1`,
			[queue],
		);
		const byId = new Map(live.map((r) => [r.id, r.lease_token]));
		for (const it of out[1]) {
			expect(typeof it.json.taskId).toBe('string');
			expect(byId.get(it.json.taskId as string)).toBe(it.json.leaseToken);
		}
	});
});
