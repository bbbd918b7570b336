/**
 * An example workflow (workflows/<file>) read for the tests that run its Priority Dequeue nodes as
 * saved against Postgres: the nodes, lookups by name, our nodes, whether a parameter is shown for a
 * node's saved parameters, where an output goes, and the saved expressions read from an item.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { PriorityDequeue } from '../../nodes/PriorityDequeue/PriorityDequeue.node';

export interface WfNode {
	name: string;
	type: string;
	typeVersion: number;
	parameters: Record<string, unknown>;
}

export interface ExampleWorkflow {
	nodes: WfNode[];
	connections: Record<string, { main: { node: string }[][] }>;
	byName(name: string): WfNode;
	/** The Priority Dequeue nodes, in file order. */
	ours: WfNode[];
	/** Priority Dequeue's parameters. */
	props: INodeProperties[];
	/** Whether `p` is shown for a node with these parameters (displayOptions.show only, as our nodes use). */
	shown(p: INodeProperties, params: Record<string, unknown>): boolean;
	/** The nodes each output of `from` is wired to, output by output. */
	targets(from: string): string[][];
}

export function loadExample(file: string): ExampleWorkflow {
	const wf = JSON.parse(readFileSync(path.join(__dirname, '../../workflows', file), 'utf8')) as Pick<ExampleWorkflow, 'nodes' | 'connections'>;
	const props = new PriorityDequeue().description.properties;
	return {
		...wf,
		byName: (n) => wf.nodes.find((x) => x.name === n) as WfNode,
		ours: wf.nodes.filter((n) => n.type === 'n8n-nodes-operation-ledger.priorityDequeue'),
		props,
		shown: (p, params) =>
			Object.entries(p.displayOptions?.show ?? {}).every(([k, vs]) => (vs as unknown[]).includes(params[k] ?? props.find((x) => x.name === k)?.default)),
		targets: (from) => wf.connections[from].main.map((out) => out.map((c) => c.node)),
	};
}

/**
 * The saved parameter `v` with the only expressions the examples' queue nodes use read from the
 * item: `={{ $json }}`, `={{ $json.X }}` and `={{ $json['X'] }}` (a missing field reads as '');
 * arrays and objects are resolved member by member. Any other expression throws, so a new one in
 * an example cannot pass unread.
 */
export function resolveSaved(v: unknown, item: INodeExecutionData): unknown {
	if (Array.isArray(v)) return v.map((x) => resolveSaved(x, item));
	if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolveSaved(x, item)]));
	if (typeof v !== 'string' || !v.startsWith('=')) return v;
	if (v === '={{ $json }}') return item.json;
	const m = /^=\{\{ \$json(?:\.(\w+)|\['([^']+)'\]) \}\}$/.exec(v);
	if (!m) throw new Error(`expression not understood by this test: ${v}`);
	return item.json[m[1] ?? m[2]] ?? '';
}
