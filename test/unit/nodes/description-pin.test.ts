/**
 * Saved workflows keep working across restructurings: every node's description (name, versions,
 * parameters with their names, types, defaults and displayOptions, operation lists, outputs) is
 * pinned by a snapshot. A change to what a node offers shows here as a diff to review; run jest
 * with -u only when the change is meant.
 */
import { ALL_NODES } from '../../helpers/nodeTypes';

/** Every node in package.json's n8n.nodes (test/helpers/nodeTypes.ts). */
const nodes = ALL_NODES;

describe('node descriptions stay what saved workflows expect', () => {
	for (const n of nodes) {
		test(`${n.description.name}`, () => {
			expect(JSON.parse(JSON.stringify(n.description))).toMatchSnapshot();
		});
	}
});
