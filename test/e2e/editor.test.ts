/**
 * The package in a real n8n editor (headless Chromium, Debian's `chromium` package): the pages of
 * scripts/screenshots.mjs and its checks (scripts/lib/editor.mjs), without writing the PNGs. After
 * setup no page may hold an unknown-node placeholder, no example node an issue marker (credential or
 * parameter warning), no output label may be cut short; Reconcile Unknown and Operation Ledger
 * Admin keep their connections when the Operation is switched back and forth; the node creator lists the trigger's own entries;
 * the credential test passes for a good credential and fails for a closed port.
 *
 * Chromium missing is installed with apt-get (as root or through sudo -n: scripts/lib/debian-package.cjs);
 * when it cannot be, the test fails, it does not skip.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { nodeRequire } from '../helpers/n8nHarness';

interface EditorLib {
	runEditorChecks(opts: { outDir?: string | null; log?: (m: string) => void }): Promise<{ problems: string[]; checked: string[]; notes: string[] }>;
}
const editor = nodeRequire('../../scripts/lib/editor.mjs') as EditorLib;

jest.setTimeout(20 * 60_000);

test('the editor shows the package without placeholders, warnings or cut labels, and Reconcile and Admin keep their connections', async () => {
	const { problems, checked, notes } = await editor.runEditorChecks({ outDir: null, log: (m) => process.stderr.write(`[editor] ${m}\n`) });
	for (const n of notes) process.stderr.write(`[editor] ${n}\n`);
	expect(problems).toEqual([]);
	// Every example was imported through the editor both ways (file and paste).
	const examples = readdirSync(path.join(__dirname, '../../workflows')).filter((f) => f.endsWith('.json'));
	for (const how of ['file', 'paste'])
		for (const f of examples) expect(checked).toContain(`import by ${how} ${f.replace(/\.json$/, '')}: every credential reference bound to the credential of its name`);
	// Every kind of check ran (a page that silently did nothing would pass the line above).
	for (const kind of [
		/node creator: no unknown-node placeholder/,
		/node creator: Priority Dequeue lists its trigger entries/,
		/example idempotent-payment: no output label cut short/,
		/example priority-consumer: no node issue marker/,
		/fresh nodes: no output label cut short/,
		/Reconcile Unknown: .* keeps both connections/,
		/Operation Ledger Admin: Settle by Hand -> Get -> Settle by Hand keeps Settled and Refused/,
		/Dequeue panel: Priority Groups is a list/,
		/import by file priority-consumer: no missing-credential or other issue marker/,
		/import by paste ledger-review: every credential reference bound to the credential of its name/,
		/import by file priority-consumer: Do The Work calls the imported priority-worker/,
		/import by paste agent-policy-ledger: .* calls the imported agent-approval/,
		/credential ledger-pg: test passes/,
		/credential ledger-bad: test fails/,
	])
		expect(checked.some((c) => kind.test(c))).toBe(true);
});
