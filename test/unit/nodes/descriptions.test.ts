/**
 * Node descriptions: every node has one version (1); Unrecorded comes first; the outputs are plain
 * lists, the same for every operation; no node is an AI tool.
 * (test/engine/ proves the behaviour in n8n's engine; this checks the descriptions without a build.)
 */
import { NodeHelpers, Workflow, type INode, type INodeOutputConfiguration, type INodeTypes } from 'n8n-workflow';
import { placeAdminOutputs } from '../../../nodes/OperationLedgerAdmin/outputs';
import { fakeExecute } from '../../helpers/fakeExecute';
import { ACTION_NODES, ALL_NODES } from '../../helpers/nodeTypes';

const nodes = ACTION_NODES;

/** Output display names n8n computes for a node of this type with these parameters. */
function outputNames(type: string, parameters: INode['parameters'] = {}): string[] {
	const nodeTypes = { getByName: () => nodes[type], getByNameAndVersion: () => nodes[type], getKnownTypes: () => ({}) } as unknown as INodeTypes;
	const node: INode = { id: '1', name: 'N', type: `x.${type}`, typeVersion: 1, position: [0, 0], parameters };
	const workflow = new Workflow({ nodes: [node], connections: {}, active: false, nodeTypes });
	const outputs = NodeHelpers.getNodeOutputs(workflow, node, nodes[type].description) as INodeOutputConfiguration[];
	return outputs.map((o) => o.displayName as string);
}

describe('node descriptions', () => {
	test('no node of the package is usable as an AI tool', () => {
		for (const n of ALL_NODES) expect(n.description.usableAsTool).toBeUndefined();
	});

	test('every node has one version, 1, and plain output lists (no expression)', () => {
		for (const n of ALL_NODES) {
			expect({ name: n.description.name, version: n.description.version, defaultVersion: n.description.defaultVersion }).toEqual({ name: n.description.name, version: 1, defaultVersion: undefined });
			expect(Array.isArray(n.description.outputs)).toBe(true);
		}
	});

	test('Unrecorded first, then the outcomes', () => {
		expect(outputNames('reserveOperation')).toEqual(['Unrecorded', 'Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before']);
		expect(outputNames('confirmOperation')).toEqual(['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Stale', 'To Review']);
		for (const operation of ['enqueue', 'dequeue', 'complete', 'stats']) expect(outputNames('priorityDequeue', { resource: 'task', operation })).toEqual(['Unrecorded', 'Result']);
	});

	test('Guarded HTTP Request: one version, Unrecorded first, the sent results, then what Reserve would answer, then To Review', () => {
		const d = nodes.guardedHttpRequest.description;
		expect(d.version).toBe(1);
		expect((d.outputs as Array<{ displayName: string }>).map((o) => o.displayName)).toEqual([
			'Unrecorded',
			'Succeeded',
			'Failed',
			'Unknown',
			'Done Before',
			'In Progress',
			'Reconcile',
			'Conflict',
			'Failed Before',
			'To Review',
		]);
		// The ledger's credential, plus one of n8n's own HTTP credentials per Authentication choice.
		expect(d.credentials?.map((c) => c.name)).toEqual(['operationLedgerPostgresApi', 'httpBasicAuth', 'httpBearerAuth', 'httpHeaderAuth', 'httpQueryAuth', 'oAuth2Api']);
		const timeout = d.properties.find((p) => p.name === 'timeoutMs');
		expect(timeout).toMatchObject({ required: true, default: 10000, typeOptions: { minValue: 1, maxValue: 600000 } });
	});

	test('Reconcile Unknown: Claim and Resolve have the same outputs, so switching drops no connection', () => {
		const all = ['Unrecorded', 'To Check', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];
		expect(outputNames('reconcileUnknown', { operation: 'claim' })).toEqual(all);
		expect(outputNames('reconcileUnknown', { operation: 'resolve' })).toEqual(all);
	});

	const ADMIN_OPS = ['get', 'list', 'settle', 'health', 'hardDelete', 'compact'];

	test('Operation Ledger Admin has the same outputs for every operation', () => {
		const d = nodes.operationLedgerAdmin.description;
		const ops = (d.properties.find((p) => p.name === 'operation')?.options ?? []).map((o) => (o as { value: string }).value);
		expect([...ops].sort()).toEqual([...ADMIN_OPS].sort());
		for (const operation of ADMIN_OPS) expect(outputNames('operationLedgerAdmin', { operation })).toEqual(['Unrecorded', 'Result', 'Settled', 'Refused']);
		// No operation given: the default (List) gets the same list.
		expect(outputNames('operationLedgerAdmin')).toEqual(['Unrecorded', 'Result', 'Settled', 'Refused']);
	});

	test("placeAdminOutputs puts Result at 1 and Settle's Settled and Refused at 2 and 3", () => {
		const it = (n: string) => ({ json: { n } });
		const fns = fakeExecute({ items: [], params: {} });
		expect(placeAdminOutputs(fns, 'get', [[it('u')], [it('r')]])).toEqual([[it('u')], [it('r')], [], []]);
		expect(placeAdminOutputs(fns, 'settle', [[it('u')], [it('s')], [it('x')]])).toEqual([[it('u')], [], [it('s')], [it('x')]]);
		// An operation returning the other shape is a programming error, never silently re-indexed.
		expect(() => placeAdminOutputs(fns, 'settle', [[], []])).toThrow(/returned 2 outputs, expected 3/);
		expect(() => placeAdminOutputs(fns, 'list', [[], [], []])).toThrow(/returned 3 outputs, expected 2/);
	});
});
