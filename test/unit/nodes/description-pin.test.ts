/**
 * Saved workflows keep working across restructurings: every node's description (name, versions,
 * parameters with their names, types, defaults and displayOptions, operation lists, outputs) is
 * pinned by a snapshot. A change to what a node offers shows here as a diff to review; run jest
 * with -u only when the change is meant.
 */
import type { INodeType } from 'n8n-workflow';
import { ReserveOperation } from '../../../nodes/ReserveOperation/ReserveOperation.node';
import { ConfirmOperation } from '../../../nodes/ConfirmOperation/ConfirmOperation.node';
import { ReconcileUnknown } from '../../../nodes/ReconcileUnknown/ReconcileUnknown.node';
import { PriorityDequeue } from '../../../nodes/PriorityDequeue/PriorityDequeue.node';
import { PriorityDequeueTrigger } from '../../../nodes/PriorityDequeueTrigger/PriorityDequeueTrigger.node';
import { OperationLedgerAdmin } from '../../../nodes/OperationLedgerAdmin/OperationLedgerAdmin.node';
import { GuardedHttpRequest } from '../../../nodes/GuardedHttpRequest/GuardedHttpRequest.node';

const nodes: INodeType[] = [new ReserveOperation(), new ConfirmOperation(), new ReconcileUnknown(), new PriorityDequeue(), new PriorityDequeueTrigger(), new OperationLedgerAdmin(), new GuardedHttpRequest()];

describe('node descriptions stay what saved workflows expect', () => {
	for (const n of nodes) {
		test(`${n.description.name}`, () => {
			expect(JSON.parse(JSON.stringify(n.description))).toMatchSnapshot();
		});
	}
});
