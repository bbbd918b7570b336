/**
 * The package's nodes, derived from package.json's `n8n.nodes` (the list n8n loads), each loaded
 * from its TypeScript source: a node added to or dropped from the package changes these lists
 * without a second list to edit.
 */
import type { INodeType } from 'n8n-workflow';
import { basename, join } from 'node:path';
import pkg from '../../package.json';

/** `dist/nodes/<Dir>/<Name>.node.js` → an instance of the class <Name> exported by nodes/<Dir>/<Name>.node.ts. */
function load(distPath: string): INodeType {
	const m = /^dist\/nodes\/([^/]+)\/([^/]+)\.node\.js$/.exec(distPath);
	if (!m) throw new Error(`package.json n8n.nodes: unexpected path ${distPath}`);
	const mod = require(join(__dirname, '../../nodes', m[1], `${m[2]}.node`)) as Record<string, new () => INodeType>;
	const Node = mod[basename(m[2])];
	if (typeof Node !== 'function') throw new Error(`${distPath}: nodes/${m[1]}/${m[2]}.node.ts exports no class ${m[2]}`);
	return new Node();
}

/** Every node of the package, in package.json's order. */
export const ALL_NODES: INodeType[] = pkg.n8n.nodes.map(load);

/** The package's action nodes (each with its own outputs; the trigger left out), keyed by node type name. */
export const ACTION_NODES: Record<string, INodeType> = Object.fromEntries(
	ALL_NODES.filter((n) => !n.description.group.includes('trigger')).map((n) => [n.description.name, n]),
);
