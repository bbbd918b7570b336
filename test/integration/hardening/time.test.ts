/**
 * Case 2: time. The n8n process in one time zone, the database in another, timestamps without an
 * offset. A private Postgres whose database default time zone is America/Caracas (UTC-4); the
 * nodes run in a child `node` process (time-child.ts, bundled with esbuild) with
 * TZ=Pacific/Kiritimati (UTC+14), and again with TZ=America/Los_Angeles and the session time zone
 * Asia/Kathmandu (UTC+5:45) given in the connection string (options=-c timezone=...).
 *
 * Rule for timestamps without an offset (the queue's "Not Before"): they are UTC. The n8n
 * process's TZ never changes their meaning.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { Pool } from 'pg';
import { migrate } from '../../../src/db/migrate';
import { repoRoot, startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';

jest.setTimeout(120_000);

const SCHEMA = 'hz_time';
let pg: PrivatePostgres;
let bundle: string;

beforeAll(async () => {
	pg = await startPrivatePostgres({ name: 'time' });
	await pg.sql(`ALTER DATABASE ledger SET timezone = 'America/Caracas'`, [], 'postgres');
	const pool = new Pool({ connectionString: pg.url, max: 1 });
	await migrate(pool, ledgerSchema(SCHEMA), true);
	await pool.end();
	const outDir = path.join(repoRoot, '.cache', 'hardening');
	mkdirSync(outDir, { recursive: true });
	bundle = path.join(outDir, `time-child-${process.pid}.js`);
	buildSync({
		entryPoints: [path.join(__dirname, 'time-child.ts')],
		bundle: true,
		platform: 'node',
		target: 'node20',
		format: 'cjs',
		outfile: bundle,
		external: ['pg', 'n8n-workflow', 'canonicalize'],
		logLevel: 'error',
	});
});
afterAll(async () => {
	if (bundle) rmSync(bundle, { force: true });
	await pg?.destroy();
});

type Obs = Record<string, unknown>;
function runChild(tz: string, url: string): Obs {
	const r = spawnSync(process.execPath, [bundle], {
		env: { ...process.env, TZ: tz, HZ_URL: url, HZ_SCHEMA: SCHEMA, NODE_PATH: path.join(repoRoot, 'node_modules') },
		cwd: repoRoot,
		encoding: 'utf8',
		timeout: 60_000,
	});
	const line = (r.stdout ?? '').trim().split('\n').pop() ?? '';
	let obs: Obs;
	try {
		obs = JSON.parse(line);
	} catch {
		throw new Error(`child printed no JSON (exit ${r.status}): ${r.stdout}\n${r.stderr}`);
	}
	if (obs.error) throw new Error(`child failed: ${obs.error}`);
	return obs;
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const near = (ms: unknown, expected: number, slack = 2500) => {
	expect(typeof ms).toBe('number');
	expect(Math.abs((ms as number) - expected)).toBeLessThanOrEqual(slack);
};

function checkAll(o: Obs) {
	// Ledger lease: 90 s from the database clock, ISO-8601 UTC, same instant as stored.
	expect(o.leaseExpiresAt).toMatch(ISO_UTC);
	near(o.leaseFromDbNowMs, 90_000);
	expect(o.leaseStoredIso).toBe(o.leaseExpiresAt);
	// Settle delay: compared on the database clock only.
	expect(o.claimBeforeSettle).toBe(0);
	expect(o.claimAfterSettle).toBe(1);
	near(o.claimFromDbNowMs, 300_000);
	// Reconcile backoff: base 120 s after the first inconclusive check.
	near(o.backoffFromDbNowMs, 120_000);
	// Queue: an offset is honoured; no offset means UTC, whatever TZ the process has.
	expect(o.notBeforeWithOffset).toBe('2030-05-31T20:00:00.000Z');
	// Queue lease 45 s; aging sees the 600 s wait on the database clock; fail backoff 50..100 s.
	expect(o.dequeued).toBe(1);
	near(o.queueLeaseFromDbNowMs, 45_000);
	expect(o.waitedSeconds as number).toBeGreaterThanOrEqual(599);
	expect(o.waitedSeconds as number).toBeLessThan(605);
	expect(o.failOutcome).toBe('retry_scheduled');
	expect(o.retryFromDbNowMs as number).toBeGreaterThanOrEqual(50_000 - 2500);
	expect(o.retryFromDbNowMs as number).toBeLessThanOrEqual(100_000 + 2500);
	// bigint ids are strings; pg's global timestamptz parser untouched.
	expect(o.taskIdType).toBe('string');
	expect(o.claimSeqType).toBe('string');
	expect(o.eventIdTypes).toEqual(['string', 'string', 'string']); // reserved, confirmed_unknown, reconcile_still_unknown
	expect(o.parserUnchanged).toBe(true);
	for (const s of o.isoStrings as string[]) expect(s).toMatch(ISO_UTC);
	// Last, as it is the one that fails while src/queue/enqueue.ts reads such a time in the process's
	// zone (new Date('2030-12-01T10:00:00') is local time in JavaScript): see docs/hardening.md.
	expect(o.notBeforeNoOffset).toBe('2030-12-01T10:00:00.000Z');
}

describe('time zones and timestamps', () => {
	it('process TZ Pacific/Kiritimati (UTC+14), database America/Caracas (UTC-4)', () => {
		const o = runChild('Pacific/Kiritimati', pg.url);
		expect(o.processOffsetMin).toBe(14 * 60);
		expect(o.sessionZone).toBe('America/Caracas');
		// The database renders the stored lease in its own zone; the node reports the same instant in UTC.
		expect(String(o.leaseStoredText)).toMatch(/-04$/);
		checkAll(o);
	});

	it('process TZ America/Los_Angeles, session time zone Asia/Kathmandu from the connection string', () => {
		const o = runChild('America/Los_Angeles', `${pg.url}?options=${encodeURIComponent('-c timezone=Asia/Kathmandu')}`);
		expect(o.sessionZone).toBe('Asia/Kathmandu');
		expect(String(o.leaseStoredText)).toMatch(/\+05:45$/);
		checkAll(o);
	});

	it('loading and using the package leaves pg.types at its defaults (timestamptz parser, int8 as string)', async () => {
		const pgTypes = require('pg').types;
		const before = { tz: pgTypes.getTypeParser(1184), ts: pgTypes.getTypeParser(1114), int8: pgTypes.getTypeParser(20) };
		const { getPool, closeAllPools } = require('../../../src/db/pool');
		require('../../../nodes/ReserveOperation/ReserveOperation.node');
		require('../../../nodes/PriorityDequeue/PriorityDequeue.node');
		const pool = getPool({ connectionString: pg.url, schema: SCHEMA });
		const { rows } = await pool.query(`SELECT 9007199254740993::bigint AS big, now() AS at`);
		expect(rows[0].big).toBe('9007199254740993');
		expect(rows[0].at).toBeInstanceOf(Date);
		expect(pgTypes.getTypeParser(1184)).toBe(before.tz);
		expect(pgTypes.getTypeParser(1114)).toBe(before.ts);
		expect(pgTypes.getTypeParser(20)).toBe(before.int8);
		expect(pgTypes.getTypeParser(20)('9007199254740993')).toBe('9007199254740993');
		await closeAllPools();
	});
});
