/**
 * A read-only database: the credential reaches a standby, as after a failover
 * when the old primary comes back as a standby (a private cluster started with standby.signal and
 * no primary to follow). Every write fails with SQLSTATE 25006; the error item says the database is
 * read-only and is retryable (the same item succeeds once the credential reaches the primary),
 * and nothing reaches a go-ahead output.
 */
import { ledgerSchema } from '../../../src/db/identifiers';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import type { INodeExecutionData } from 'n8n-workflow';
import { closeAllPools } from '../../../src/db/pool';
import { migrate } from '../../../src/db/migrate';
import { testCredentials } from '../../helpers/fakeExecute';
import { enqueue, reserve } from './run';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/privatePostgres';

jest.setTimeout(180_000);

let pg: PrivatePostgres;
const schema = 'ol_readonly';
beforeAll(async () => {
	pg = await startPrivatePostgres({ name: 'readonly' });
	const pool = new Pool({ connectionString: pg.url, max: 1 });
	await migrate(pool, ledgerSchema(schema), true);
	await pool.end();
	pg.stop('fast');
	// No primary_conninfo: it stays a standby (hot_standby is on by default), read-only.
	writeFileSync(path.join(pg.dataDir, 'standby.signal'), '');
	pg.start();
	const [r] = await pg.sql<{ in_recovery: boolean }>('SELECT pg_is_in_recovery() AS in_recovery');
	expect(r.in_recovery).toBe(true);
});
afterAll(async () => {
	await closeAllPools();
	await pg?.destroy();
});

/** The error items of a node run (wherever the node version puts them), and every other item. */
function split(out: INodeExecutionData[][]) {
	const all = out.flat();
	return { errors: all.filter((i) => 'error' in i.json), others: all.filter((i) => !('error' in i.json)) };
}

describe('a standby (read-only database)', () => {
	const creds = () => testCredentials(pg.url, schema, { autoApplySchema: false });
	it('Reserve: the error item says read-only, is retryable, and nothing proceeds', async () => {
		const { errors, others } = split(await reserve(creds(), ['ro:1'], {}, { continueOnFail: true }));
		expect(others).toEqual([]);
		expect(errors).toHaveLength(1);
		expect(errors[0].json).toMatchObject({ retryable: true });
		expect(String(errors[0].json.error)).toMatch(/the database is read-only here \(SQLSTATE 25006: a standby, or a primary a failover demoted\)/);
	});

	it('Enqueue: the same', async () => {
		const { errors, others } = split(await enqueue(creds(), 'ro', [{ a: 1 }], {}, { continueOnFail: true }));
		expect(others).toEqual([]);
		expect(errors).toHaveLength(1);
		expect(errors[0].json).toMatchObject({ retryable: true });
		expect(String(errors[0].json.error)).toMatch(/read-only here \(SQLSTATE 25006/);
	});
});
