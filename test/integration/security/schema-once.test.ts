/**
 * The schema is validated and quoted once per connection: the door
 * (nodes/shared/connection.ts openLedgerConnection) makes the one LedgerSchema of a connection with
 * ledgerSchema() (src/db/identifiers.ts), and every core call of that connection reads its quoted
 * form without validating it again. Through the node path, one Reserve and one Dequeue execution
 * (two connections) validate exactly twice, and every SQL text they send names the schema quoted.
 * A raw string that reaches the core anyway (plain JavaScript, a cast) is refused before any SQL.
 * The type-level half (a raw string does not type-check) is in test/unit/plumbing.test.ts.
 */
import { Client } from 'pg';
import * as identifiers from '../../../src/db/identifiers';
import { InvalidSchemaNameError } from '../../../src/db/identifiers';
import { closeAllPools } from '../../../src/db/pool';
import { prepareReserveItem, reserveOperations } from '../../../src/ledger/reserve';
import { dequeue, enqueue as enqueueCore } from '../../../src/queue';
import { DATABASE_URL, testDatabase } from '../../helpers/db';
import { testCredentials } from '../../helpers/fakeExecute';
import { dequeue as dequeueNode, reserve } from '../hardening/run';

let db: Awaited<ReturnType<typeof testDatabase>>;
beforeAll(async () => {
	db = await testDatabase({ prefix: 'ol_once' });
});
afterAll(async () => {
	await closeAllPools();
	await db.drop();
});
afterEach(() => jest.restoreAllMocks());

/** Every SQL text any pg client of this process sends from now on. */
function recordSql(): string[] {
	const texts: string[] = [];
	const original = Client.prototype.query;
	jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
		const first = args[0] as string | { text?: string };
		texts.push(typeof first === 'string' ? first : (first?.text ?? ''));
		return (original as (...a: unknown[]) => unknown).apply(this, args);
	} as never);
	return texts;
}

describe('the schema: validated and quoted once per connection', () => {
	it('one Reserve and one Dequeue through the node path: one validation per connection, the schema only quoted in SQL text', async () => {
		await enqueueCore(db.pool, db.ledgerSchema, [{ queue: 'once', group: 'high', payload: { n: 1 } }]);
		const creds = testCredentials(DATABASE_URL, db.schema);
		const validations = jest.spyOn(identifiers, 'ledgerSchema');
		const texts = recordSql();

		const [unrecorded, proceed] = await reserve(creds, ['once:reserve:k1:v1']);
		expect(unrecorded).toEqual([]);
		expect(proceed).toHaveLength(1);
		expect(validations).toHaveBeenCalledTimes(1);
		const [notClaimed, claimed] = await dequeueNode(creds, 'once', 5);
		expect(notClaimed).toEqual([]);
		expect(claimed.map((i) => i.json.payload)).toEqual([{ n: 1 }]);
		// Two executions, two connections, two validations: none inside the core or the migrator check.
		expect(validations).toHaveBeenCalledTimes(2);
		expect(validations.mock.calls).toEqual([[db.schema], [db.schema]]);

		const quoted = `"${db.schema}"`;
		expect(texts.some((t) => t.includes(`${quoted}.reserve_operations(`))).toBe(true);
		expect(texts.some((t) => t.includes(`${quoted}.queue_claim(`))).toBe(true);
		// Wherever the schema's name appears in SQL text, it appears double-quoted.
		const bare = texts.filter((t) => t.split(quoted).join('').includes(db.schema));
		expect(bare).toEqual([]);
	});

	it('a raw string that reaches the core anyway is refused before any SQL is sent; nothing is written', async () => {
		const texts = recordSql();
		const item = prepareReserveItem(0, { operationKey: 'once:raw:k1:v1', request: { a: 1 }, leaseSeconds: 60 });
		for (const raw of [db.schema, db.schemaSql]) {
			await expect(reserveOperations(db.pool, raw as never, [item])).rejects.toBeInstanceOf(InvalidSchemaNameError);
			await expect(dequeue(db.pool, raw as never, { queue: 'once', limit: 1 })).rejects.toBeInstanceOf(InvalidSchemaNameError);
		}
		expect(texts).toEqual([]);
		jest.restoreAllMocks();
		const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schemaSql}.operations WHERE operation_key = 'once:raw:k1:v1'`);
		expect(rows[0].n).toBe(0);
	});
});
