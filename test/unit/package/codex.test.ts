/**
 * Codex files (nodes/<Node>/<Node>.node.json) place the nodes in n8n's node creator. n8n's editor
 * files a node under its own Core Nodes sections (Flow, Data Transformation, Helpers, Other Trigger
 * Nodes) only when the codex lists the "Core Nodes" category (or "AI" / "HITL") with subcategories;
 * every other node goes where app and community nodes go ("Action in an app", app triggers).
 * Checked here: no such category or subcategory, the codex names its node, and each node links its
 * documentation on the repository.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const codexFiles = readdirSync(path.join(root, 'nodes'))
	.flatMap((d) => readdirSync(path.join(root, 'nodes', d)).map((f) => path.join('nodes', d, f)))
	.filter((f) => f.endsWith('.node.json'));

describe('codex files', () => {
	it('there is one per node package.json registers', () => {
		expect(codexFiles.length).toBe(pkg.n8n.nodes.length);
	});

	it.each(codexFiles)('%s is filed with app/community nodes, not under Core Nodes', (file) => {
		const codex = JSON.parse(readFileSync(path.join(root, file), 'utf8'));
		expect(codex.node).toMatch(new RegExp(`^${pkg.name}\\.[a-z][A-Za-z]+$`));
		for (const reserved of ['Core Nodes', 'AI', 'HITL']) expect(codex.categories).not.toContain(reserved);
		expect(codex.subcategories).toBeUndefined();
		expect(codex.categories.length).toBeGreaterThan(0);
		expect(codex.resources.primaryDocumentation[0].url).toMatch(/^https:\/\/github\.com\/operation-ledger\/n8n-nodes-operation-ledger/);
	});
});
