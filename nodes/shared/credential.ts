/**
 * Loading the node's credential through n8n, with a failure of its own: when n8n cannot hand the
 * credential over (none selected, deleted, not shared with the workflow's project, not
 * decryptable) no database was involved, and the message says so and where to fix it.
 * nodes/shared/items.ts batchFailure reports it as such instead of blaming the database.
 */
import { NodeOperationError, type ICredentialDataDecryptedObject, type INode } from 'n8n-workflow';

export const CREDENTIAL_NAME = 'operationLedgerPostgresApi';

/** Errors made by loadLedgerCredential() in this process (NodeOperationError, marked here). */
const CREDENTIAL_ERRORS = new WeakSet<object>();

/** True for the error loadLedgerCredential() throws when n8n cannot load the credential. */
export function isCredentialLoadError(e: unknown): e is NodeOperationError {
	return typeof e === 'object' && e !== null && CREDENTIAL_ERRORS.has(e);
}

/**
 * Reads the node's credential (execute or trigger context).
 * @throws NodeOperationError (isCredentialLoadError) when n8n cannot load it; n8n's reason is kept.
 */
export async function loadLedgerCredential(fns: {
	getNode: () => INode;
	getCredentials: (type: string) => Promise<ICredentialDataDecryptedObject>;
}): Promise<ICredentialDataDecryptedObject> {
	try {
		return await fns.getCredentials(CREDENTIAL_NAME);
	} catch (e) {
		const reason = String((e as Error)?.message ?? e).replace(/\.\s*$/, '');
		const err = new NodeOperationError(
			fns.getNode(),
			`Could not load the credential (${CREDENTIAL_NAME}): ${reason}. Open the node and select an Operation Ledger Postgres credential.`,
			{ description: 'Nothing was sent to the database. Select a credential of type Operation Ledger Postgres in the node (or share one with this workflow) and run again.' },
		);
		CREDENTIAL_ERRORS.add(err);
		throw err;
	}
}
