/**
 * Output labels must fit on n8n's canvas. Measured in a real n8n 2.33.7 editor (headless Chromium,
 * 2026-12-01): an output label is 12 px InterVariable, cut with an ellipsis beyond its max-width,
 * which is 96 px once the output is connected and 76 px while it is not (the handle is 120 px wide
 * and the label's max-width is 100% - 44 px). A fresh node has nothing connected, so every label
 * must fit in 76 px. n8n's default node is 100 px wide whatever the package says, so the labels are
 * kept short rather than the node made wider.
 *
 * The advance widths below were measured in that editor (each character repeated 20 times in a
 * label, width / 20, canvas zoom taken out); a label's width is their sum (InterVariable's kerning
 * changes it by less than 0.75 px for the words measured, and the widest space is counted, hence
 * the 0.5 px margin). The editor check
 * (test/e2e/editor.test.ts) also asserts in the real editor that no label on the example canvases
 * or on fresh nodes is cut.
 */
import { NodeHelpers, Workflow, type INode, type INodeTypes } from 'n8n-workflow';
import { ACTION_NODES } from '../../helpers/nodeTypes';

/** Max-width of an unconnected output's label on the canvas, px (n8n 2.33.7). */
export const LABEL_MAX_PX = 76;
const MARGIN_PX = 0.5;

// prettier-ignore
const ADVANCE_PX: Record<string, number> = {
	"0": 7.57,
	"1": 4.881,
	"2": 7.319,
	"3": 7.412,
	"4": 7.752,
	"5": 7.12,
	"6": 7.441,
	"7": 7.014,
	"8": 7.424,
	"9": 7.441,
	// A space collapses when repeated, so its width is taken from labels with and without one
	// ("Claim Lost", "Did Not Happen": 3.38 px, the widest seen).
	" ": 3.4,
	"A": 8.447,
	"B": 7.852,
	"C": 8.766,
	"D": 8.66,
	"E": 7.213,
	"F": 7.084,
	"G": 8.953,
	"H": 8.918,
	"I": 3.223,
	"J": 6.85,
	"K": 8.062,
	"L": 6.785,
	"M": 10.84,
	"N": 9.041,
	"O": 9.176,
	"P": 7.664,
	"Q": 9.176,
	"R": 7.723,
	"S": 7.699,
	"T": 7.746,
	"U": 8.93,
	"V": 8.447,
	"W": 12.103,
	"X": 8.186,
	"Y": 8.145,
	"Z": 7.547,
	"a": 6.738,
	"b": 7.348,
	"c": 6.855,
	"d": 7.348,
	"e": 6.996,
	"f": 3.996,
	"g": 7.359,
	"h": 7.096,
	"i": 2.906,
	"j": 2.906,
	"k": 6.586,
	"l": 2.906,
	"m": 10.512,
	"n": 7.09,
	"o": 7.195,
	"p": 7.348,
	"q": 7.348,
	"r": 4.696,
	"s": 6.334,
	"t": 3.926,
	"u": 7.096,
	"v": 6.745,
	"w": 9.82,
	"x": 6.551,
	"y": 6.745,
	"z": 6.627,
	"'": 3.598,
	"-": 5.52,
	"(": 4.377,
	")": 4.377,
	"\u2026": 10.371,
};

function labelWidth(label: string): number {
	let w = 0;
	for (const ch of label) {
		const a = ADVANCE_PX[ch];
		if (a === undefined) throw new Error(`no measured width for ${JSON.stringify(ch)} (in "${label}"): measure it or avoid it`);
		w += a;
	}
	return w;
}

const nodes = ACTION_NODES;

/** Every output display name any operation of the package's nodes can show. */
function allLabels(): Array<{ where: string; label: string }> {
	const found: Array<{ where: string; label: string }> = [];
	for (const [type, nt] of Object.entries(nodes)) {
		const d = nt.description;
		const opParams = d.properties.filter((p) => p.name === 'operation');
		const ops = [...new Set(opParams.flatMap((p) => (p.options ?? []).map((o) => (o as { value: string }).value)))];
		for (const operation of ops.length ? ops : [undefined]) {
			const nodeTypes = { getByName: () => nt, getByNameAndVersion: () => nt, getKnownTypes: () => ({}) } as unknown as INodeTypes;
			const node: INode = { id: '1', name: 'N', type: `x.${type}`, typeVersion: 1, position: [0, 0], parameters: operation ? { operation } : {} };
			const wf = new Workflow({ nodes: [node], connections: {}, active: false, nodeTypes });
			const outs = NodeHelpers.getNodeOutputs(wf, node, d) as Array<string | { displayName?: string }>;
			for (const o of outs) if (typeof o === 'object' && o.displayName) found.push({ where: `${type}${operation ? ` ${operation}` : ''}`, label: o.displayName });
		}
	}
	return found;
}

describe('output labels fit on the canvas', () => {
	test('the measure agrees with the editor: labels it showed cut are too wide, labels it showed whole fit', () => {
		// Seen in the editor on unconnected outputs: cut "Not Record…", "Still Unkno…"; whole "In Progress", "Claim Lost".
		expect(labelWidth('Not Recorded')).toBeGreaterThan(LABEL_MAX_PX);
		expect(labelWidth('Still Unknown')).toBeGreaterThan(LABEL_MAX_PX);
		expect(labelWidth('In Progress')).toBeLessThan(LABEL_MAX_PX);
		expect(labelWidth('Claim Lost')).toBeLessThan(LABEL_MAX_PX);
	});

	test(`every output label of every node and operation is at most ${LABEL_MAX_PX - MARGIN_PX} px wide`, () => {
		const labels = allLabels();
		expect(labels.length).toBeGreaterThan(20);
		// The walk reaches every operation's outputs (Reconcile's Claim, the Admin node's Get).
		expect(labels).toEqual(expect.arrayContaining([{ where: 'reconcileUnknown claim', label: 'Claim Lost' }, { where: 'operationLedgerAdmin get', label: 'Refused' }]));
		const tooWide = labels.filter((l) => labelWidth(l.label) > LABEL_MAX_PX - MARGIN_PX).map((l) => `${l.where}: "${l.label}" ${labelWidth(l.label).toFixed(1)} px`);
		expect(tooWide).toEqual([]);
	});
});
