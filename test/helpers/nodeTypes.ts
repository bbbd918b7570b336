/** The package's action nodes (each with its own outputs), keyed by node type name, for description tests. */
import type { INodeType } from 'n8n-workflow';
import { ReserveOperation } from '../../nodes/ReserveOperation/ReserveOperation.node';
import { ConfirmOperation } from '../../nodes/ConfirmOperation/ConfirmOperation.node';
import { ReconcileUnknown } from '../../nodes/ReconcileUnknown/ReconcileUnknown.node';
import { PriorityDequeue } from '../../nodes/PriorityDequeue/PriorityDequeue.node';
import { OperationLedgerAdmin } from '../../nodes/OperationLedgerAdmin/OperationLedgerAdmin.node';
import { GuardedHttpRequest } from '../../nodes/GuardedHttpRequest/GuardedHttpRequest.node';

export const ACTION_NODES: Record<string, INodeType> = {
	reserveOperation: new ReserveOperation(),
	confirmOperation: new ConfirmOperation(),
	reconcileUnknown: new ReconcileUnknown(),
	priorityDequeue: new PriorityDequeue(),
	operationLedgerAdmin: new OperationLedgerAdmin(),
	guardedHttpRequest: new GuardedHttpRequest(),
};
