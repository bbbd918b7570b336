#!/usr/bin/env node
// Screenshots of the package in a real n8n editor, for docs/screenshots/ and the README:
//
//   node scripts/screenshots.mjs            # writes docs/screenshots/*.png, prints a check per page
//
// The pages and checks are in scripts/lib/editor.mjs (shared with test/e2e/editor.test.ts, which
// runs the same checks in `npm test` without writing PNGs). A failed check fails this script
// (exit 1). Needs Debian's `chromium` (or CHROMIUM=<binary>); database: DATABASE_URL, else an
// embedded Postgres; 2-4 minutes once the n8n runtime is installed.
import path from 'node:path';
import { repoRoot } from './lib/embedded-pg.mjs';
import { runEditorChecks } from './lib/editor.mjs';

const log = (m) => console.log(`[screenshots] ${m}`);

runEditorChecks({ outDir: path.join(repoRoot, 'docs', 'screenshots'), log })
	.then(({ problems, checked, notes }) => {
		for (const n of notes) log(n);
		if (problems.length) {
			console.error(`[screenshots] checks failed:\n  ${problems.join('\n  ')}`);
			process.exitCode = 1;
		} else {
			log(`${checked.length} checks passed:\n  ${checked.join('\n  ')}`);
		}
	})
	.catch((e) => {
		console.error(e);
		process.exitCode = 1;
	});
