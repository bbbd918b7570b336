/**
 * An operation's name is written once, as its key in the node's router map (nodes/<Node>/router.ts):
 * the Operation options and every parameter's `operation` display condition are derived from it
 * (nodes/shared/router.ts). Checks each node of the package against its map.
 */
import type { INodeProperties, INodeType } from 'n8n-workflow';
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { operationProperties, type OperationMap } from '../../../nodes/shared/router';
import { ALL_NODES } from '../../helpers/nodeTypes';

const NODES_DIR = join(__dirname, '../../../nodes');
/** nodes/<Dir>/router.ts's `operations`, for every node folder that has one. */
const maps: Record<string, OperationMap> = Object.fromEntries(
	readdirSync(NODES_DIR)
		.filter((d) => d !== 'shared' && existsSync(join(NODES_DIR, d, 'router.ts')))
		.map((d) => [d, (require(join(NODES_DIR, d, 'router')) as { operations: OperationMap }).operations]),
);
const nodeOf = (dir: string): INodeType => {
	const n = ALL_NODES.find((x) => x.constructor.name === dir);
	if (!n) throw new Error(`no node class ${dir} in package.json's n8n.nodes`);
	return n;
};
const operationValues = (props: INodeProperties[]) =>
	props.filter((p) => p.name === 'operation').flatMap((p) => (p.options ?? []).map((o) => (o as { value: string }).value));

describe('operation names come from the router map', () => {
	it('finds the maps (so the checks below can fail)', () => {
		expect(Object.keys(maps).sort()).toEqual(['ConfirmOperation', 'GuardedHttpRequest', 'OperationLedgerAdmin', 'PriorityDequeue', 'ReconcileUnknown', 'ReserveOperation']);
	});

	it.each(Object.keys(maps))('%s: the Operation options are exactly the map keys, and every operation condition names map keys only', (dir) => {
		const keys = Object.keys(maps[dir]);
		const props = nodeOf(dir).description.properties;
		if (keys.length === 1) {
			expect(operationValues(props)).toEqual([]);
			expect(props.filter((p) => p.displayOptions?.show?.operation)).toEqual([]);
			return;
		}
		expect(operationValues(props).sort()).toEqual([...keys].sort());
		for (const p of props) {
			for (const v of (p.displayOptions?.show?.operation as string[] | undefined) ?? []) expect(keys).toContain(v);
		}
	});

	it.each(Object.keys(maps))('%s: no operation module names its own operation (the router adds it) nor an Operation value', (dir) => {
		for (const [key, op] of Object.entries(maps[dir])) {
			expect({ key, value: (op.option as { value?: unknown }).value }).toEqual({ key, value: undefined });
			for (const p of op.description) expect({ key, param: p.name, operation: p.displayOptions?.show?.operation }).toEqual({ key, param: p.name, operation: undefined });
		}
	});

	it('a parameter object two operations list is one parameter shown for both; other conditions stay', () => {
		const shared: INodeProperties = { displayName: 'S', name: 's', type: 'string', default: '' };
		const own: INodeProperties = { displayName: 'O', name: 'o', type: 'string', default: '', displayOptions: { show: { mode: ['x'] } } };
		const op = (description: INodeProperties[]) => ({ option: { name: 'N', action: 'a', description: 'd' }, description, execute: async () => [] });
		expect(operationProperties({ b: op([shared, own]), a: op([shared]) })).toEqual([
			{ ...shared, displayOptions: { show: { operation: ['a', 'b'] } } },
			{ ...own, displayOptions: { show: { mode: ['x'], operation: ['b'] } } },
		]);
	});
});
