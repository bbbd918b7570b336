// Validation once, at the core boundary (src/queue/prepared.ts): each queue operation's prepare
// function is where its rules live; the operation checks raw inputs with it (before anything is
// sent) and does not check prepared ones again.
import * as types from '../../../src/queue/types';
import type { Queryable } from '../../../src/db/values';
import { InputError } from '../../../src/errors';
import {
	complete,
	dequeue,
	enqueue,
	extendLease,
	fail,
	prepareBackoff,
	prepareCompleteInput,
	prepareDequeueOptions,
	prepareEnqueueInput,
	prepareExtendLeaseInput,
	prepareFailInput,
	preparePurgeOptions,
	prepareReleaseInput,
	prepareRequeueByIdInput,
	prepareRequeueDeadOptions,
	prepareStatsRequest,
	purge,
	release,
	requeueDead,
	requeueDeadByIds,
	statsReport,
} from '../../../src/queue';

const S = types.ledgerSchema('s');
const TOKEN = '0b1e5c1e-8a55-4c6e-9d42-3f0f3c1d2e7a';
const task = { taskId: '42', leaseToken: TOKEN };

/** A Queryable that records the SQL it is given and answers no rows. */
function recordingDb() {
	const sent: string[] = [];
	return { sent, query: async (sql: string) => (sent.push(sql), { rows: [] as never[], rowCount: 0 }) } as unknown as Queryable & { sent: string[] };
}

afterEach(() => jest.restoreAllMocks());

describe('queue inputs are checked once, in the core', () => {
	// [operation, the call with a bad raw input, the message its prepare function gives]
	const bad: Array<[string, (db: ReturnType<typeof recordingDb>) => Promise<unknown>, () => unknown, RegExp]> = [
		['enqueue', (db) => enqueue(db, S, [{ queue: '', group: 'g' }]), () => prepareEnqueueInput({ queue: '', group: 'g' }), /^Queue name must be a non-empty string$/],
		['dequeue', (db) => dequeue(db, S, { queue: 'q', limit: 0 }), () => prepareDequeueOptions({ queue: 'q', limit: 0 }), /^Batch size must be/],
		['complete', (db) => complete(db, S, [{ ...task, taskId: 'x' }]), () => prepareCompleteInput({ ...task, taskId: 'x' }), /^Task ID must be a positive integer/],
		['fail', (db) => fail(db, S, [{ ...task, leaseToken: 'nope', error: 'e' }]), () => prepareFailInput({ ...task, leaseToken: 'nope', error: 'e' }), /^Lease token must be the UUID/],
		['fail backoff', (db) => fail(db, S, [{ ...task, error: 'e' }], { baseSeconds: -1 }), () => prepareBackoff({ baseSeconds: -1 }), /^Backoff base/],
		['extend lease', (db) => extendLease(db, S, [{ ...task, leaseSeconds: 0 }]), () => prepareExtendLeaseInput({ ...task, leaseSeconds: 0 }), /^Lease/],
		['release', (db) => release(db, S, [{ ...task, delaySeconds: -1 }]), () => prepareReleaseInput({ ...task, delaySeconds: -1 }), /^Release delay/],
		['requeue dead', (db) => requeueDead(db, S, { queue: 'q', limit: 0 }), () => prepareRequeueDeadOptions({ queue: 'q', limit: 0 }), /^Limit/],
		['requeue by id', (db) => requeueDeadByIds(db, S, [{ queue: 'q', taskId: '0' }]), () => prepareRequeueByIdInput({ queue: 'q', taskId: '0' }), /^Task ID must be a positive integer/],
		['purge', (db) => purge(db, S, { limit: 0 }), () => preparePurgeOptions({ limit: 0 }), /^Purge limit/],
		['stats', (db) => statsReport(db, S, { queue: 'q', deadTasks: 1001 }), () => prepareStatsRequest({ queue: 'q', deadTasks: 1001 }), /^Include dead tasks/],
	];
	test.each(bad)('%s: a bad raw input is refused with the prepare function\'s message before any SQL', async (_name, call, prep, message) => {
		expect(prep).toThrow(InputError);
		expect(prep).toThrow(message);
		const db = recordingDb();
		await expect(call(db)).rejects.toThrow(message);
		await expect(call(db)).rejects.toBeInstanceOf(InputError);
		expect(db.sent).toEqual([]);
	});

	test('a prepared input is not checked again; a raw one is checked by the operation', async () => {
		const spy = jest.spyOn(types, 'checkQueueName');
		const prepared = prepareEnqueueInput({ queue: 'jobs', group: 'high', payload: { a: 1 } });
		expect(spy).toHaveBeenCalledTimes(1);
		const db = recordingDb();
		await enqueue(db, S, [prepared]);
		expect(spy).toHaveBeenCalledTimes(1);
		await enqueue(db, S, [{ queue: 'jobs', group: 'high' }]);
		expect(spy).toHaveBeenCalledTimes(2);
		const opts = prepareDequeueOptions({ queue: 'jobs', limit: 5 });
		await dequeue(db, S, opts);
		await dequeue(db, S, opts);
		expect(spy).toHaveBeenCalledTimes(3);
		expect(db.sent).toHaveLength(4);
	});

	test('prepare functions normalise: defaults filled in, ids as text, tokens in lower case, a copy of the input', () => {
		const raw = { taskId: 7, leaseToken: TOKEN.toUpperCase() };
		const p = prepareReleaseInput(raw);
		expect(p).toEqual({ taskId: '7', leaseToken: TOKEN, delaySeconds: 0, countAttempt: false });
		expect(p).not.toBe(raw);
		expect(prepareDequeueOptions({ queue: 'q', limit: 1 })).toMatchObject({ leaseSeconds: 300, agingSeconds: 300 });
		expect(preparePurgeOptions({ queue: '  ' })).toMatchObject({ queue: null, limit: 10_000 });
		expect(prepareEnqueueInput({ queue: 'q', group: 'g', dedupeKey: '', notBefore: '2030-12-01T10:00:00' })).toMatchObject({
			payload: {},
			dedupeKey: null,
			notBefore: '2030-12-01T10:00:00.000Z',
			maxAttempts: 5,
		});
	});
});
