#!/usr/bin/env node
// Renders an n8n workflow JSON file as an SVG diagram: nodes as boxes at their canvas positions,
// sticky notes behind them, main connections as curves with output labels, AI sub-node
// connections dashed. Deterministic (same input, same bytes), no network, no dependencies.
//
//   node scripts/render-workflow.mjs workflows/agent-policy-ledger.json docs/agent-policy-ledger.svg
//   node scripts/render-workflow.mjs --no-notes in.json out.svg     (without the sticky notes)
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const withNotes = !args.includes('--no-notes');
const [input, output] = args.filter((a) => !a.startsWith('--'));
if (!input || !output) {
	process.stderr.write('usage: node scripts/render-workflow.mjs [--no-notes] <workflow.json> <out.svg>\n');
	process.exit(2);
}

const wf = JSON.parse(readFileSync(input, 'utf8'));
const BOX_W = 180;
const BOX_H = 64;
const PAD = 60;

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const r1 = (n) => Math.round(n * 10) / 10;

/** Output names the editor shows, per node type; undefined: one unnamed output. */
function outputNames(node) {
	const t = node.type;
	// The package's nodes: Unrecorded first, one list per node (nodes/shared/outputs.ts).
	if (t.endsWith('.reserveOperation')) return ['Unrecorded', 'Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'];
	if (t.endsWith('.confirmOperation')) return ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Stale', 'To Review'];
	if (t.endsWith('.guardedHttpRequest')) return ['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before', 'To Review'];
	if (t.endsWith('.operationLedgerAdmin')) return ['Unrecorded', 'Result', 'Settled', 'Refused'];
	if (t.endsWith('.reconcileUnknown')) return ['Unrecorded', 'To Check', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];
	if (t.endsWith('.priorityDequeue')) return ['Unrecorded', 'Result'];
	if (t === 'n8n-nodes-base.splitInBatches') return ['done', 'loop'];
	if (t === 'n8n-nodes-base.if') return ['true', 'false'];
	if (t === 'n8n-nodes-base.switch') {
		const rules = node.parameters?.rules?.values ?? [];
		const names = rules.map((r, i) => (r.renameOutput && r.outputKey ? r.outputKey : String(i)));
		if (node.parameters?.options?.fallbackOutput === 'extra') names.push(node.parameters.options.renameFallbackOutput || 'Fallback');
		return names;
	}
	return undefined;
}

/** Fill and stroke per kind of node. */
function palette(node) {
	const t = node.type;
	if (/trigger|webhook/i.test(t) && !t.endsWith('respondToWebhook')) return ['#e8f5e9', '#2e7d32'];
	if (t.startsWith('@n8n/n8n-nodes-langchain.')) return ['#f3e5f5', '#6a1b9a'];
	if (t.startsWith('n8n-nodes-operation-ledger.')) return ['#e3f2fd', '#1565c0'];
	if (t === 'n8n-nodes-base.httpRequest') return ['#fff3e0', '#e65100'];
	if (t === 'n8n-nodes-base.code' || t === 'n8n-nodes-base.switch' || t === 'n8n-nodes-base.if') return ['#fffde7', '#f9a825'];
	if (t === 'n8n-nodes-base.wait' || t === 'n8n-nodes-base.executeWorkflow') return ['#fce4ec', '#ad1457'];
	if (t === 'n8n-nodes-base.respondToWebhook') return ['#e8f5e9', '#2e7d32'];
	return ['#f5f5f5', '#616161'];
}

const typeLabel = (t) => t.replace(/^n8n-nodes-base\./, '').replace(/^@n8n\/n8n-nodes-langchain\./, '').replace(/^n8n-nodes-operation-ledger\./, 'ledger.');

/** Greedy word wrap to at most `max` characters per line. */
function wrap(text, max) {
	const lines = [];
	for (const para of String(text).split('\n')) {
		let line = '';
		for (const word of para.split(/\s+/).filter(Boolean)) {
			if (line && line.length + 1 + word.length > max) {
				lines.push(line);
				line = word;
			} else line = line ? `${line} ${word}` : word;
		}
		lines.push(line);
	}
	return lines;
}

const plain = (md) =>
	md
		.replace(/\*\*([^*]+)\*\*/g, '$1')
		.replace(/\*([^*]+)\*/g, '$1')
		.replace(/`([^`]+)`/g, '$1')
		.replace(/^#+\s*/gm, '')
		.replace(/^- /gm, '• ');

const nodes = wf.nodes.filter((n) => n.type !== 'n8n-nodes-base.stickyNote');
const notes = withNotes ? wf.nodes.filter((n) => n.type === 'n8n-nodes-base.stickyNote') : [];
const byName = new Map(nodes.map((n) => [n.name, n]));
/** Box height: taller for nodes with many outputs, so each output gets its own port. */
const boxH = (n) => Math.max(BOX_H, 16 + 18 * ((outputNames(n)?.length ?? 1) - 1));

// Canvas bounds.
let minX = Infinity;
let minY = Infinity;
let maxX = -Infinity;
let maxY = -Infinity;
const grow = (x, y, w, h) => {
	minX = Math.min(minX, x);
	minY = Math.min(minY, y);
	maxX = Math.max(maxX, x + w);
	maxY = Math.max(maxY, y + h);
};
for (const n of nodes) grow(n.position[0], n.position[1], BOX_W, boxH(n));
for (const s of notes) grow(s.position[0], s.position[1], s.parameters.width ?? 240, s.parameters.height ?? 160);
// Room for the loop-back curves under the lowest node.
const loopDepth = 90;
maxY += loopDepth;
const ox = PAD - minX;
const oy = PAD + 40 - minY;
const W = Math.ceil(maxX - minX + 2 * PAD + 120);
const H = Math.ceil(maxY - minY + 2 * PAD + 40);

const out = [];
out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif">`);
out.push(`<title>${esc(wf.name)}</title>`);
out.push('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>');
out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
out.push(`<text x="${PAD}" y="${PAD}" font-size="22" font-weight="bold" fill="#222">${esc(wf.name)}</text>`);

// Sticky notes.
const NOTE_COLORS = { 1: '#fff5d6', 2: '#ffe4d6', 3: '#fde7e9', 4: '#e4f4e4', 5: '#dcebfa', 6: '#ece4f7', 7: '#f0f0f0' };
for (const s of notes) {
	const x = s.position[0] + ox;
	const y = s.position[1] + oy;
	const w = s.parameters.width ?? 240;
	const h = s.parameters.height ?? 160;
	out.push(`<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="6" fill="${NOTE_COLORS[s.parameters.color ?? 1] ?? NOTE_COLORS[1]}" stroke="#d0c8a0" stroke-width="1"/>`);
	const text = plain(s.parameters.content ?? '');
	const perLine = Math.floor((w - 24) / 7.1);
	const lines = wrap(text, perLine);
	const maxLines = Math.floor((h - 24) / 17);
	lines.slice(0, maxLines).forEach((line, i) => {
		const bold = i === 0;
		out.push(
			`<text x="${x + 12}" y="${y + 24 + i * 17}" font-size="${bold ? 15 : 13}"${bold ? ' font-weight="bold"' : ''} fill="#333">${esc(i === maxLines - 1 && lines.length > maxLines ? `${line} …` : line)}</text>`,
		);
	});
}

// Connections.
const port = (node, index, count) => {
	const x = node.position[0] + ox + BOX_W;
	const h = boxH(node);
	const y = node.position[1] + oy + (count <= 1 ? h / 2 : 8 + (index * (h - 16)) / (count - 1));
	return [x, y];
};
const labels = [];
let loopLane = 0;
for (const [from, byType] of Object.entries(wf.connections)) {
	const src = byName.get(from);
	if (!src) continue;
	for (const [type, outputs] of Object.entries(byType)) {
		outputs.forEach((targets, index) => {
			for (const c of targets ?? []) {
				const dst = byName.get(c.node);
				if (!dst) continue;
				if (type !== 'main') {
					// A sub-node (model, parser, memory, tool) feeding a root node: top of the sub-node to the bottom of the root.
					const x1 = src.position[0] + ox + BOX_W / 2;
					const y1 = src.position[1] + oy;
					const x2 = dst.position[0] + ox + BOX_W / 2;
					const y2 = dst.position[1] + oy + boxH(dst);
					out.push(`<path d="M${r1(x1)},${r1(y1)} C${r1(x1)},${r1(y1 - 50)} ${r1(x2)},${r1(y2 + 50)} ${r1(x2)},${r1(y2)}" fill="none" stroke="#6a1b9a" stroke-width="1.6" stroke-dasharray="5,4" marker-end="url(#arrow)"/>`);
					const label = type.replace(/^ai_/, '').replace(/([A-Z])/g, ' $1').toLowerCase();
					out.push(`<text x="${r1((x1 + x2) / 2 + 6)}" y="${r1((y1 + y2) / 2)}" font-size="10.5" fill="#6a1b9a">${esc(label)}</text>`);
					continue;
				}
				const names = outputNames(src);
				const count = Math.max(outputs.length, names?.length ?? 1);
				const [x1, y1] = port(src, index, count);
				const x2 = dst.position[0] + ox;
				const y2 = dst.position[1] + oy + boxH(dst) / 2;
				let d;
				if (x2 > x1 + 20) {
					const dx = Math.max(40, (x2 - x1) / 2);
					d = `M${r1(x1)},${r1(y1)} C${r1(x1 + dx)},${r1(y1)} ${r1(x2 - dx)},${r1(y2)} ${r1(x2)},${r1(y2)}`;
				} else {
					// A connection backwards (a loop): out to the right, under both nodes, into the target from the left.
					const bottom = Math.max(src.position[1] + boxH(src), dst.position[1] + boxH(dst)) + oy + 30 + (loopLane++ % 6) * 10;
					d = `M${r1(x1)},${r1(y1)} C${r1(x1 + 60)},${r1(y1)} ${r1(x1 + 60)},${r1(bottom)} ${r1(x1)},${r1(bottom)} L${r1(x2)},${r1(bottom)} C${r1(x2 - 60)},${r1(bottom)} ${r1(x2 - 60)},${r1(y2)} ${r1(x2)},${r1(y2)}`;
				}
				out.push(`<path d="${d}" fill="none" stroke="#777" stroke-width="1.5" marker-end="url(#arrow)"/>`);
				if (names && names[index] !== undefined) labels.push({ x: x1 + 4, y: y1 - 3, text: names[index] });
			}
		});
	}
}

// Nodes.
for (const n of nodes) {
	const x = n.position[0] + ox;
	const y = n.position[1] + oy;
	const [fill, stroke] = palette(n);
	const h = boxH(n);
	out.push(`<rect x="${x}" y="${y}" width="${BOX_W}" height="${h}" rx="8" fill="${fill}" stroke="${stroke}" stroke-width="2"/>`);
	const lines = wrap(n.name, 24).slice(0, 2);
	lines.forEach((line, i) => {
		const ty = y + (h - BOX_H) / 2 + (lines.length === 1 ? 30 : 23 + i * 15);
		out.push(`<text x="${x + BOX_W / 2}" y="${ty}" font-size="13" font-weight="bold" text-anchor="middle" fill="#222">${esc(line)}</text>`);
	});
	out.push(`<text x="${x + BOX_W / 2}" y="${y + (h + BOX_H) / 2 - 9}" font-size="10" text-anchor="middle" fill="#666">${esc(typeLabel(n.type))}</text>`);
}

// Output labels last, on top, with a white halo.
for (const l of labels) {
	out.push(`<text x="${r1(l.x)}" y="${r1(l.y)}" font-size="10.5" fill="#1a1a1a" stroke="#ffffff" stroke-width="3" paint-order="stroke">${esc(l.text)}</text>`);
}

out.push('</svg>');
writeFileSync(output, `${out.join('\n')}\n`);
process.stdout.write(`${output}: ${nodes.length} nodes, ${notes.length} notes, ${W}x${H}\n`);
