/**
 * Loading the node's credential through n8n, with a failure of its own: when n8n cannot hand the
 * credential over (none selected, deleted, not shared with the workflow's project, not
 * decryptable) no database was involved, and the message says so and where to fix it.
 * nodes/shared/items.ts batchFailure reports it as such instead of blaming the database.
 */
import { NodeOperationError, type ICredentialDataDecryptedObject, type INode } from 'n8n-workflow';

export const CREDENTIAL_NAME = 'operationLedgerPostgresApi';

/** n8n could not load the node's credential; `message` keeps n8n's own reason. */
export class CredentialLoadError extends NodeOperationError {
	constructor(node: INode, n8nMessage: string) {
		super(
			node,
			`Could not load the credential (${CREDENTIAL_NAME}): ${n8nMessage}. Open the node and select an Operation Ledger Postgres credential.`,
			{ description: 'Nothing was sent to the database. Select a credential of type Operation Ledger Postgres in the node (or share one with this workflow) and run again.' },
		);
		this.name = 'CredentialLoadError';
	}
}

/**
 * Reads the node's credential (execute or trigger context).
 * @throws CredentialLoadError when n8n cannot load it.
 */
export async function loadLedgerCredential(fns: {
	getNode: () => INode;
	getCredentials: (type: string) => Promise<ICredentialDataDecryptedObject>;
}): Promise<ICredentialDataDecryptedObject> {
	try {
		return await fns.getCredentials(CREDENTIAL_NAME);
	} catch (e) {
		throw new CredentialLoadError(fns.getNode(), String((e as Error)?.message ?? e).replace(/\.\s*$/, ''));
	}
}
