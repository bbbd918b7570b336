/**
 * A file the package ships (schema/, package.json) missing on disk is an incomplete installation,
 * reported as such: a PackageFileMissingError naming the path looked for, not retryable, and in a
 * node's error item "the package installation is incomplete" (never "the database refused the
 * statement": no SQL was sent).
 */
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { batchFailure } from '../../../nodes/shared/items';
import { PackageFileMissingError, schemaDir } from '../../../src/db/migrate';

describe('a missing file of the installed package', () => {
	let root: string;
	beforeEach(() => {
		// An installed package's layout with its schema/ gone: <pkg>/dist/src/db holds the code.
		root = mkdtempSync(path.join(os.tmpdir(), 'ol-pkg-'));
		mkdirSync(path.join(root, 'dist', 'src', 'db'), { recursive: true });
	});
	afterEach(() => rmSync(root, { recursive: true, force: true }));

	it('schemaDir: the shipped schema/ is found next to this module', () => {
		expect(schemaDir()).toBe(path.resolve(__dirname, '../../../schema'));
	});

	it('schemaDir: no schema/migrations next to the code is a PackageFileMissingError naming both places looked in', () => {
		const base = path.join(root, 'dist', 'src', 'db');
		let err: unknown;
		try {
			schemaDir(base);
		} catch (e) {
			err = e;
		}
		expect(err).toBeInstanceOf(PackageFileMissingError);
		const e = err as PackageFileMissingError;
		expect(e.retryable).toBe(false);
		expect(e.missing).toBe(`${path.join(root, 'dist', 'schema', 'migrations')} or ${path.join(root, 'schema', 'migrations')}`);
		expect(e.message).toMatch(/^A file of the installed package is missing: .*schema[/\\]migrations\. .*install the package again and restart n8n/);
	});

	it('in the error item: "the package installation is incomplete", retryable false, never "the database refused the statement"', () => {
		const fns = { continueOnFail: () => true, getNode: () => ({ name: 'Reserve Operation' }) } as never;
		const [item] = batchFailure(fns, new PackageFileMissingError('/nodes/node_modules/n8n-nodes-operation-ledger/schema/migrations'), 'Reserve Operation', [0]);
		expect(item.json.error).toBe(
			'Reserve Operation failed and nothing of this batch was recorded (1 item(s)): the package installation is incomplete: ' +
				'A file of the installed package is missing: /nodes/node_modules/n8n-nodes-operation-ledger/schema/migrations. ' +
				"The n8n-nodes-operation-ledger installation in n8n's nodes folder is incomplete; install the package again and restart n8n " +
				'(each queue-mode worker needs its own complete copy).',
		);
		expect(item.json.retryable).toBe(false);
		expect(String(item.json.error)).not.toMatch(/database refused/);
	});
});
