import { NodeOperationError, type IExecuteFunctions } from 'n8n-workflow';
import { assertJson, NotJsonError } from '../../src/json/canonical';
import { findDuplicateMember } from '../../src/json/duplicates';
import type { EventContext } from '../../src/ledger/states';

/** Which execution, workflow and node caused an event (recorded on every ledger event). */
export function eventContext(fns: IExecuteFunctions): EventContext {
	let workflowId: string | undefined;
	try {
		workflowId = String(fns.getWorkflow().id ?? '') || undefined;
	} catch {
		workflowId = undefined;
	}
	let executionMode: string | undefined;
	try {
		executionMode = fns.getMode?.() ?? undefined;
	} catch {
		executionMode = undefined;
	}
	return { executionId: fns.getExecutionId?.() ?? undefined, workflowId, nodeName: fns.getNode().name, executionMode };
}

/**
 * Reads a `json`-type parameter: objects pass through, strings are parsed as JSON. Either way the
 * value must be plain JSON that Postgres can store (no BigInt, Date, function, circular reference,
 * NaN or Infinity, no NUL character, at most 100 levels deep): otherwise an item-level error names
 * the offending member, before anything is written. (Without this check, such a value failed the
 * whole batch later, in JSON.stringify or in Postgres.) `check` false: the caller validates itself
 * (Reserve fingerprints the request, Confirm sizes the response, each with its own message).
 *
 * `duplicates` (text only): 'reject' refuses an object with two members of one name (I-JSON, RFC
 * 7493 §2.3: JSON.parse would silently keep the last one, so the stored value and its fingerprint
 * would not be what the text says); 'last-wins' keeps JSON.parse's behaviour, for a value that
 * describes work already done (Complete's result), where refusing would leave it unrecorded.
 */
export function jsonParameter(
	fns: IExecuteFunctions,
	value: unknown,
	what: string,
	itemIndex: number,
	check = true,
	duplicates: 'reject' | 'last-wins' = 'reject',
): unknown {
	let parsed = value;
	if (typeof value === 'string') {
		const text = value.trim();
		if (text === '') return null;
		try {
			parsed = JSON.parse(text);
		} catch (e) {
			throw new NodeOperationError(fns.getNode(), `${what} is not valid JSON: ${(e as Error).message}`, { itemIndex });
		}
		const dup = duplicates === 'reject' ? findDuplicateMember(text) : null;
		if (dup) {
			throw new NodeOperationError(fns.getNode(), `${what} has the member name "${dup.name}" twice in one object (at ${dup.path})`, {
				itemIndex,
				description:
					'Nothing was written. JSON objects must not repeat a name (RFC 7493 I-JSON, required by RFC 8785): a JSON parser keeps only one of the two values, so the text would not say what is stored. Remove one of them.',
			});
		}
	}
	if (!check) return parsed;
	try {
		assertJson(parsed);
	} catch (e) {
		const detail = e instanceof NotJsonError ? e.message.replace(/^\$/, what.replace(/^The /, '').toLowerCase()) : (e as Error).message;
		throw new NodeOperationError(fns.getNode(), `${what} is not plain JSON: ${detail}`, {
			itemIndex,
			description: 'Nothing was written. Convert the value first (e.g. a date with .toISOString(), a BigInt with .toString()).',
		});
	}
	return parsed;
}
