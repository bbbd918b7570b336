/**
 * Each node's page in docs/nodes/<Node>.md lists the numeric parameters of the node with the range
 * and default the node's description gives them (which come from src/limits.ts), in a section
 * "## Numeric parameters", so the page cannot drift from the node. The section is made from the
 * descriptions: `UPDATE_NODE_DOCS=1 npx jest test/unit/nodes/docs-bounds` rewrites it after a
 * change (review the diff), like `jest -u` for the description pin.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { INodeProperties } from 'n8n-workflow';
import pkg from '../../../package.json';
import { ALL_NODES } from '../../helpers/nodeTypes';

const root = path.resolve(__dirname, '../../..');
const HEADING = '## Numeric parameters';

type Row = { name: string; where: string; range: string; def: string };

const fmt = (n: unknown) => (typeof n === 'number' ? n.toLocaleString('en-US') : String(n));

/** Every number parameter, nested ones included, with the operations that show it. */
function numberRows(props: readonly INodeProperties[], parent: string, where: string, out: Row[] = []): Row[] {
	for (const p of props) {
		const ops = (p.displayOptions?.show?.operation as string[] | undefined)?.join(', ');
		const w = ops ?? where;
		const label = parent ? `${parent} → ${p.displayName}` : p.displayName;
		if (p.type === 'number') {
			const t = (p.typeOptions ?? {}) as { minValue?: number; maxValue?: number };
			const range = t.minValue !== undefined || t.maxValue !== undefined ? `${fmt(t.minValue ?? '…')} to ${fmt(t.maxValue ?? '…')}` : 'any';
			out.push({ name: label, where: w, range, def: fmt(p.default) });
		}
		for (const o of (p.options ?? []) as unknown[]) {
			const opt = o as { values?: INodeProperties[]; type?: string; displayName?: string };
			if (Array.isArray(opt.values)) numberRows(opt.values, label, w, out);
			else if (typeof opt.type === 'string') numberRows([opt as INodeProperties], p.displayName, w, out);
		}
	}
	return out;
}

/** The section's text for one node. */
export function boundsSection(props: readonly INodeProperties[]): string {
	const seen = new Set<string>();
	const rows = numberRows(props, '', 'all').filter((r) => {
		const k = JSON.stringify(r);
		return seen.has(k) ? false : (seen.add(k), true);
	});
	const lines = [
		HEADING,
		'',
		'As the node gives them (src/limits.ts; made from the node description by test/unit/nodes/docs-bounds.test.ts).',
		'',
	];
	if (rows.length === 0) lines.push('None.');
	else {
		lines.push('| Parameter | Operation | Range | Default |', '|---|---|---|---|');
		for (const r of rows) lines.push(`| ${r.name} | ${r.where} | ${r.range} | ${r.def} |`);
	}
	return lines.join('\n') + '\n';
}

/** The page's current section (from the heading to the next `## ` or the end), or null. */
function currentSection(text: string): { start: number; end: number } | null {
	const start = text.indexOf(`\n${HEADING}\n`);
	if (start < 0) return null;
	const next = text.indexOf('\n## ', start + HEADING.length + 2);
	return { start: start + 1, end: next < 0 ? text.length : next + 1 };
}

const pages = pkg.n8n.nodes.map((p, i) => ({ dir: /^dist\/nodes\/([^/]+)\//.exec(p)![1], node: ALL_NODES[i] }));

test('the section lists a number parameter with its range and default (so the check can fail)', () => {
	const s = boundsSection([{ displayName: 'Lease (Seconds)', name: 'lease', type: 'number', default: 300, typeOptions: { minValue: 1, maxValue: 604800 } }]);
	expect(s).toContain('| Lease (Seconds) | all | 1 to 604,800 | 300 |');
});

test.each(pages.map((p) => [p.dir, p] as const))('docs/nodes/%s.md lists the numeric parameters as the node has them', (_dir, { dir, node }) => {
	const file = path.join(root, 'docs', 'nodes', `${dir}.md`);
	const text = readFileSync(file, 'utf8');
	const want = boundsSection(node.description.properties);
	const at = currentSection(text);
	if (process.env.UPDATE_NODE_DOCS === '1') {
		const next = at ? text.slice(0, at.start) + want + (at.end < text.length ? '\n' : '') + text.slice(at.end) : text.replace(/\n## Versions\n/, `\n${want}\n## Versions\n`);
		writeFileSync(file, next);
		return;
	}
	expect(at).not.toBeNull();
	expect(text.slice(at!.start, at!.end).trimEnd()).toBe(want.trimEnd());
});

// A number the editor lets through unbounded reaches the core's check as an item error at run
// time, or, where the node forgot the core's bound, is a second copy of it that drifts (Requeue
// Dead's Limit once said "1 to …, 50" while the core took 1 to 10,000, default 100).
test.each(pages.map((p) => [p.dir, p] as const))('%s: every number parameter has both editor bounds', (_dir, { node }) => {
	const open = numberRows(node.description.properties, '', 'all').filter((r) => r.range === 'any' || r.range.includes('…'));
	expect(open).toEqual([]);
});
