/**
 * Priority groups as Priority Dequeue and its trigger take them, parsed once here: the "Priority
 * Groups" list (an n8n fixedCollection: one row per group, a name, a weight and Strict (Always
 * First)), read from the parameter as `{ group: [{ name, weight, strict }, ...] }`. It gives GroupWeight[] highest priority
 * first; weights and names are then checked by checkGroups (src/queue/dequeue.ts: 1 to 20 groups,
 * distinct names, integer weights 1 to 1000).
 */
import { InputError } from '../errors';
import type { GroupWeight } from './states';

/**
 * Reads a "Priority Groups" fixedCollection value, `{ group: [{ name: 'high', weight: 5 }, ...] }`,
 * rows in order (highest priority first). Names are trimmed; a weight may come as a number or a
 * numeric string (an expression); strict, when present, a boolean (true: the group always goes first). Throws InputError for a value of another shape, a row without a
 * name, or a weight that is not a whole number; no rows at all is an error too (a consumer that
 * claims no group would claim nothing). Range checks are checkGroups' job.
 */
export function groupsFromRows(value: unknown): GroupWeight[] {
	if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value))
		throw new InputError('Priority groups: expected a list of groups (name and weight)');
	const rows = (value as { group?: unknown }).group;
	if (rows === undefined || (Array.isArray(rows) && rows.length === 0)) throw new InputError('Priority groups: add at least one group');
	if (!Array.isArray(rows)) throw new InputError('Priority groups: expected a list of groups (name and weight)');
	return rows.map((row: unknown, i) => {
		const r = (row ?? {}) as { name?: unknown; weight?: unknown; strict?: unknown };
		const name = typeof r.name === 'string' ? r.name.trim() : '';
		if (name === '') throw new InputError(`Priority groups: group ${i + 1} has no name`);
		const weight = typeof r.weight === 'string' && r.weight.trim() !== '' ? Number(r.weight) : r.weight;
		if (typeof weight !== 'number' || !Number.isInteger(weight))
			throw new InputError(`Priority groups: the weight of "${name}" must be a whole number (got ${JSON.stringify(r.weight)})`);
		if (r.strict !== undefined && typeof r.strict !== 'boolean')
			throw new InputError(`Priority groups: Strict (Always First) of "${name}" must be true or false (got ${JSON.stringify(r.strict)})`);
		return r.strict === true ? { name, weight, strict: true } : { name, weight };
	});
}
