// Post-build step (after `n8n-node build`):
// 1. bundle dist/src/vendor.js with pg, pg-connection-string and canonicalize inlined, so the
//    package has no runtime deps; refuse when the bundle holds a package that
//    bundle/THIRD_PARTY.json does not list (or lists with another licence);
// 2. write dist/THIRD_PARTY_NOTICES.md: each bundled package, its version, licence and licence text;
// 3. copy schema/ (migrations, functions, apply.sql, version_table.sql, security) next to the
//    compiled code, where the migration runner reads it (dist/schema/security ships the role script).
import { build } from 'esbuild';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUNDLE_OPTIONS, bundledPackages, notices, unlisted } from './lib/third-party.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const vendor = path.join(root, 'dist/src/vendor.js');
const packages = await bundledPackages(vendor);
const problems = unlisted(packages);
if (problems.length) {
	console.error(`bundle refused:\n  ${problems.join('\n  ')}\nList each package (and its licence) in bundle/THIRD_PARTY.json after checking it may be shipped.`);
	process.exit(1);
}
await build({ ...BUNDLE_OPTIONS, entryPoints: [vendor], outfile: vendor, allowOverwrite: true });
const own = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
writeFileSync(path.join(root, 'dist/THIRD_PARTY_NOTICES.md'), notices(packages, `${own.name}@${own.version}`));
rmSync(path.join(root, 'dist/schema'), { recursive: true, force: true });
cpSync(path.join(root, 'schema'), path.join(root, 'dist/schema'), { recursive: true, filter: (src) => !/\.(md|txt)$/.test(src) });
console.log(`bundled dist/src/vendor.js (${packages.length} packages, see dist/THIRD_PARTY_NOTICES.md) and copied schema/`);
