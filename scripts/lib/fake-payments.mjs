// Loads the ONE fake payments provider (test/helpers/fakePaymentsApi.ts, shared with the tests and the
// demo): compiles it with esbuild into .cache/demo and imports it. Used by scripts/demo.mjs and
// scripts/fake-payments-api.mjs.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './embedded-pg.mjs';

/** @returns {Promise<{ startFakePaymentsApi(options?: { port?: number }): Promise<{ url: string, port: number, close(): Promise<void> }> }>} */
export async function loadFakePaymentsApi() {
	const { transform } = await import('esbuild');
	const src = readFileSync(path.join(repoRoot, 'test/helpers/fakePaymentsApi.ts'), 'utf8');
	const { code } = await transform(src, { loader: 'ts', format: 'esm', target: 'node20' });
	const dir = path.join(repoRoot, '.cache', 'demo');
	mkdirSync(dir, { recursive: true });
	const file = path.join(dir, 'fakePaymentsApi.mjs');
	writeFileSync(file, code);
	return import(pathToFileURL(file).href);
}
