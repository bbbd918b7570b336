/**
 * Run by time.test.ts in a child `node` process whose TZ differs from the database's time zone
 * (bundled with esbuild first). Drives the nodes and prints one JSON line of observations:
 * what the nodes returned and what the database holds, each with the database clock.
 * Env: HZ_URL (connection string, may carry options=-c timezone=...), HZ_SCHEMA.
 */
import { closeAllPools } from '../../../src/db/pool';
import { testCredentials } from '../../helpers/fakeExecute';
import { claim, confirm, dequeue, enqueue, queueOp, reserve, resolve } from './run';
import pgModule from 'pg';

async function main() {
	const parserBefore = pgModule.types.getTypeParser(1184);
	const url = process.env.HZ_URL as string;
	const schema = process.env.HZ_SCHEMA as string;
	const creds = testCredentials(url, schema);
	const direct = new pgModule.Client({ connectionString: url });
	await direct.connect();
	const dbNow = async () => Number((await direct.query('SELECT extract(epoch FROM now()) * 1000 AS ms')).rows[0].ms);
	const sessionZone = (await direct.query('SHOW timezone')).rows[0].TimeZone as string;
	const tag = `${process.env.TZ}-${Date.now()}`;
	const out: Record<string, unknown> = { processTz: process.env.TZ, processOffsetMin: -new Date().getTimezoneOffset(), sessionZone };

	// Ledger: lease
	const key = `time:${tag}`;
	const t0 = await dbNow();
	const r = await reserve(creds, [key], { leaseSeconds: 90, settleSeconds: 30, target: `time-${tag}` });
	const ledger = r[1][0].json.ledger as Record<string, string>;
	out.leaseExpiresAt = ledger.leaseExpiresAt;
	out.leaseFromDbNowMs = Date.parse(ledger.leaseExpiresAt) - t0;
	const stored = await direct.query(`SELECT lease_expires_at, lease_expires_at::text AS text FROM "${schema}".operations WHERE operation_key = $1`, [key]);
	out.leaseStoredIso = (stored.rows[0].lease_expires_at as Date).toISOString();
	out.leaseStoredText = stored.rows[0].text;

	// Ledger: settle delay (unknown for 0 s is not due with a 30 s settle delay; 40 s back it is)
	await confirm(creds, [{ key, token: ledger.leaseToken, outcome: 'unknown', reason: 'timeout' }]);
	// (The 30 s window is the operation's own, given to Reserve; the claim adds no extra delay.)
	out.claimBeforeSettle = (await claim(creds, { target: `time-${tag}`, settleSeconds: 0 }))[1].length;
	await direct.query(`UPDATE "${schema}".operations SET unknown_since = unknown_since - interval '40 seconds', settle_until = settle_until - interval '40 seconds' WHERE operation_key = $1`, [key]);
	const claimed = await claim(creds, { target: `time-${tag}`, settleSeconds: 0 });
	out.claimAfterSettle = claimed[1].length;
	const c = claimed[1][0].json as Record<string, unknown>;
	out.unknownSince = c.unknownSince;
	out.claimExpiresAt = (c.reconcile as Record<string, string>).claimExpiresAt;
	out.claimFromDbNowMs = Date.parse(out.claimExpiresAt as string) - (await dbNow());
	// Ledger: backoff
	const t1 = await dbNow();
	const res = await resolve(creds, [{ key, claimToken: (c.reconcile as Record<string, string>).claimToken, resolution: 'still_unknown' }], {
		backoffBaseSeconds: 120,
		backoffMaxSeconds: 3600,
	});
	const rec = res[4][0].json.reconcile as Record<string, string>;
	out.nextCheckAt = rec.nextCheckAt;
	out.backoffFromDbNowMs = Date.parse(rec.nextCheckAt) - t1;

	// Queue: not-before with an offset, without an offset; lease; aging wait
	const queue = `time-${tag}`;
	const withOffset = await enqueue(creds, queue, [{}], { options: { notBefore: '2030-06-01T10:00:00+14:00' } });
	out.notBeforeWithOffset = withOffset[1][0].json.availableAt;
	const noOffset = await enqueue(creds, queue, [{}], { options: { notBefore: '2030-12-01T10:00:00' } });
	out.notBeforeNoOffset = noOffset[1][0].json.availableAt;
	const ready = await enqueue(creds, queue, [{}], { priorityGroup: 'low' });
	out.taskIdType = typeof ready[1][0].json.taskId;
	await direct.query(`UPDATE "${schema}".queue_tasks SET run_at = now() - interval '600 seconds' WHERE id = $1`, [ready[1][0].json.taskId]);
	const t2 = await dbNow();
	const got = await dequeue(creds, queue, 5, { leaseSeconds: 45, options: { agingSeconds: 300 } });
	const task = got[1][0].json as Record<string, unknown>;
	out.dequeued = got[1].length;
	out.claimSeqType = typeof task.claimSeq;
	out.waitedSeconds = task.waitedSeconds;
	out.queueLeaseFromDbNowMs = Date.parse(task.leaseExpiresAt as string) - t2;
	// Queue: fail backoff (base 100 s, cap 100 s: the retry is 50 to 100 s away on the database clock)
	const t3 = await dbNow();
	const failed = await queueOp(creds, 1, {
		operation: 'fail',
		taskSource: 'explicit',
		taskId: task.taskId,
		leaseToken: task.leaseToken,
		errorMessage: 'boom',
		options: { backoffBaseSeconds: 100, backoffCapSeconds: 100 },
	});
	const f = failed[1][0].json as Record<string, unknown>;
	out.failOutcome = f.outcome;
	const runAt = await direct.query(`SELECT run_at FROM "${schema}".queue_tasks WHERE id = $1`, [task.taskId]);
	out.retryFromDbNowMs = (runAt.rows[0].run_at as Date).getTime() - t3;
	out.failJson = f;

	// Event ids are bigint: strings with pg's default parser.
	const ev = await direct.query(`SELECT event_id FROM "${schema}".operation_events WHERE operation_key = $1 ORDER BY event_id`, [key]);
	out.eventIdTypes = ev.rows.map((x) => typeof x.event_id);
	out.parserUnchanged = pgModule.types.getTypeParser(1184) === parserBefore;

	// Every timestamp the nodes returned: ISO-8601 UTC with milliseconds
	out.isoStrings = [out.leaseExpiresAt, out.unknownSince, out.claimExpiresAt, out.nextCheckAt, out.notBeforeWithOffset, task.leaseExpiresAt, task.enqueuedAt, task.availableAt];
	await direct.end();
	await closeAllPools();
	process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((e) => {
	process.stdout.write(`${JSON.stringify({ error: String(e?.stack ?? e) })}\n`);
	process.exitCode = 1;
});
