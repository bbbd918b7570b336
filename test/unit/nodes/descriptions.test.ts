/**
 * Node descriptions: version 2 and later put Unrecorded first; no node is an AI tool.
 * (test/engine/ proves the behaviour in n8n's engine; this checks the descriptions without a build.)
 */
import { Workflow, type INode, type INodeType, type INodeTypes } from 'n8n-workflow';
import { PriorityDequeueTrigger } from '../../../nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node';
import { OperationLedgerAdmin } from '../../../nodes/OperationLedgerAdmin/OperationLedgerAdmin.node';
import { placeAdminOutputs } from '../../../nodes/OperationLedgerAdmin/outputs';
import { fakeExecute } from '../../helpers/fakeExecute';
import { ACTION_NODES } from '../../helpers/nodeTypes';

const nodes = ACTION_NODES;

/** Output display names n8n computes for a node of this type, version and parameters. */
function outputNames(type: string, typeVersion: number, parameters: INode['parameters'] = {}): string[] {
	const nodeTypes = { getByName: () => nodes[type], getByNameAndVersion: () => nodes[type], getKnownTypes: () => ({}) } as unknown as INodeTypes;
	const node: INode = { id: '1', name: 'N', type: `x.${type}`, typeVersion, position: [0, 0], parameters };
	const workflow = new Workflow({ nodes: [node], connections: {}, active: false, nodeTypes });
	const outputs = workflow.expression.getSimpleParameterValue(node, nodes[type].description.outputs as string, 'internal', {}) as Array<{ displayName: string }>;
	return outputs.map((o) => o.displayName);
}

describe('node descriptions', () => {
	test('no node of the package is usable as an AI tool', () => {
		for (const n of [...Object.values(nodes), new PriorityDequeueTrigger()]) expect(n.description.usableAsTool).toBeUndefined();
	});

	test('Reserve and Confirm have versions 1 and 2, default 2; Reconcile, Dequeue and the trigger add version 3, the default', () => {
		for (const n of [nodes.reserveOperation, nodes.confirmOperation]) {
			expect(n.description.version).toEqual([1, 2]);
			expect(n.description.defaultVersion).toBe(2);
		}
		for (const n of [nodes.reconcileUnknown, nodes.priorityDequeue, new PriorityDequeueTrigger()]) {
			expect(n.description.version).toEqual([1, 2, 3]);
			expect(n.description.defaultVersion).toBe(3);
		}
	});

	test('Reconcile Unknown version 3: Claim and Resolve have the same outputs, so switching drops no connection', () => {
		const v3 = ['Unrecorded', 'To Check', 'Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];
		expect(outputNames('reconcileUnknown', 3, { operation: 'claim' })).toEqual(v3);
		expect(outputNames('reconcileUnknown', 3, { operation: 'resolve' })).toEqual(v3);
		// Versions 1 and 2 still change with the operation (saved workflows keep their wiring).
		expect(outputNames('reconcileUnknown', 2, { operation: 'claim' })).not.toEqual(outputNames('reconcileUnknown', 2, { operation: 'resolve' }));
	});

	test('version 2 puts Unrecorded first; version 1 keeps its outputs', () => {
		const v1Reserve = ['Proceed', 'Done Before', 'In Progress', 'Reconcile', 'Conflict', 'Failed Before'];
		expect(outputNames('reserveOperation', 1)).toEqual(v1Reserve);
		expect(outputNames('reserveOperation', 2)).toEqual(['Unrecorded', ...v1Reserve]);
		expect(outputNames('confirmOperation', 1)).toEqual(['Succeeded', 'Failed', 'Unknown', 'Stale']);
		expect(outputNames('confirmOperation', 2)).toEqual(['Unrecorded', 'Succeeded', 'Failed', 'Unknown', 'Stale']);
		expect(outputNames('reconcileUnknown', 1, { operation: 'claim' })).toEqual(['To Check']);
		expect(outputNames('reconcileUnknown', 2, { operation: 'claim' })).toEqual(['Unrecorded', 'To Check']);
		const resolve = ['Succeeded', 'Failed', 'Unknown', 'To Review', 'Claim Lost'];
		expect(outputNames('reconcileUnknown', 1, { operation: 'resolve' })).toEqual(resolve);
		expect(outputNames('reconcileUnknown', 2, { operation: 'resolve' })).toEqual(['Unrecorded', ...resolve]);
		expect(outputNames('priorityDequeue', 1)).toEqual(['Result']);
		expect(outputNames('priorityDequeue', 2)).toEqual(['Unrecorded', 'Result']);
		expect(outputNames('priorityDequeue', 3)).toEqual(['Unrecorded', 'Result']);
	});

	const ADMIN_OPS = ['get', 'list', 'settle', 'health', 'hardDelete', 'compact'];

	test('Operation Ledger Admin has versions 1 and 2, default 2; version 2 has the same outputs for every operation', () => {
		const d = nodes.operationLedgerAdmin.description;
		expect(d.version).toEqual([1, 2]);
		expect(d.defaultVersion).toBe(2);
		const ops = (d.properties.find((p) => p.name === 'operation')?.options ?? []).map((o) => (o as { value: string }).value);
		expect([...ops].sort()).toEqual([...ADMIN_OPS].sort());
		for (const operation of ADMIN_OPS) expect(outputNames('operationLedgerAdmin', 2, { operation })).toEqual(['Unrecorded', 'Result', 'Settled', 'Refused']);
		// No operation given: the default (List) gets the same list.
		expect(outputNames('operationLedgerAdmin', 2)).toEqual(['Unrecorded', 'Result', 'Settled', 'Refused']);
	});

	test('Operation Ledger Admin version 1 keeps its outputs per operation (saved workflows keep their wiring)', () => {
		expect(outputNames('operationLedgerAdmin', 1, { operation: 'settle' })).toEqual(['Unrecorded', 'Settled', 'Refused']);
		for (const operation of ADMIN_OPS.filter((o) => o !== 'settle')) expect(outputNames('operationLedgerAdmin', 1, { operation })).toEqual(['Unrecorded', 'Result']);
	});

	test("placeAdminOutputs: version 2 puts Result at 1 and Settle's Settled and Refused at 2 and 3; version 1 passes the outputs through", () => {
		const it = (n: string) => ({ json: { n } });
		const fns = (typeVersion: number) => fakeExecute({ items: [], params: {}, typeVersion });
		expect(placeAdminOutputs(fns(2), 'get', [[it('u')], [it('r')]])).toEqual([[it('u')], [it('r')], [], []]);
		expect(placeAdminOutputs(fns(2), 'settle', [[it('u')], [it('s')], [it('x')]])).toEqual([[it('u')], [], [it('s')], [it('x')]]);
		expect(placeAdminOutputs(fns(1), 'get', [[it('u')], [it('r')]])).toEqual([[it('u')], [it('r')]]);
		expect(placeAdminOutputs(fns(1), 'settle', [[it('u')], [it('s')], [it('x')]])).toEqual([[it('u')], [it('s')], [it('x')]]);
		// An operation returning the other shape is a programming error, never silently re-indexed.
		expect(() => placeAdminOutputs(fns(2), 'settle', [[], []])).toThrow(/returned 2 outputs, expected 3/);
		expect(() => placeAdminOutputs(fns(2), 'list', [[], [], []])).toThrow(/returned 3 outputs, expected 2/);
	});
});
