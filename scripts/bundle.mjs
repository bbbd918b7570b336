// Post-build step (after `n8n-node build`):
// 1. bundle dist/src/vendor.js with pg and canonicalize inlined, so the package has no runtime deps;
// 2. copy schema/ (migrations, functions, apply.sql, security) next to the compiled code, where the
//    migration runner reads it.
import { build } from 'esbuild';
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const vendor = path.join(root, 'dist/src/vendor.js');
await build({
	entryPoints: [vendor],
	outfile: vendor,
	allowOverwrite: true,
	bundle: true,
	platform: 'node',
	format: 'cjs',
	target: 'node18',
	// pg tries these optional modules inside try/catch; they are never needed here.
	external: ['pg-native', 'pg-cloudflare', 'cloudflare:sockets'],
	logLevel: 'warning',
	legalComments: 'inline',
});
rmSync(path.join(root, 'dist/schema'), { recursive: true, force: true });
cpSync(path.join(root, 'schema'), path.join(root, 'dist/schema'), { recursive: true, filter: (src) => !/\.(md|txt)$/.test(src) });
console.log('bundled dist/src/vendor.js and copied schema/');
