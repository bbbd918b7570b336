/**
 * Priority groups as Priority Dequeue and its trigger take them, parsed once here:
 * - node versions 1 and 2: the "Groups and weights" text, e.g. "high:5, normal:2, low:1";
 * - node version 3: the "Priority Groups" list (an n8n fixedCollection: one row per group, a name
 *   and a weight), read from the parameter as `{ group: [{ name, weight }, ...] }`.
 * Both give GroupWeight[] highest priority first; weights and names are then checked by
 * checkGroups (src/queue/dequeue.ts: 1 to 20 groups, distinct names, integer weights 1 to 1000).
 */
import { InputError } from '../errors';
import { DEFAULT_GROUPS, type GroupWeight } from './states';

/**
 * Parses "high:5, normal:2, low:1" (highest priority first; empty text: DEFAULT_GROUPS). Throws
 * InputError for a part that is not name:weight.
 */
export function parseGroupWeights(text: unknown): GroupWeight[] {
	const s = typeof text === 'string' ? text.trim() : '';
	if (s === '') return DEFAULT_GROUPS.map((g) => ({ ...g }));
	return s.split(',').map((part) => {
		const m = /^\s*([^:,]+?)\s*:\s*(\d+)\s*$/.exec(part);
		if (!m) throw new InputError(`Groups and weights: "${part.trim()}" is not name:weight (e.g. high:5, normal:2, low:1)`);
		return { name: m[1], weight: Number(m[2]) };
	});
}

/**
 * "high:5, normal:2" or "high, normal" (the trigger's Wake Up "Groups" text, versions 1 and 2): the
 * groups, weight 1 where none is given. Empty text: DEFAULT_GROUPS.
 */
export function parseGroupNames(text: unknown): GroupWeight[] {
	const s = typeof text === 'string' ? text.trim() : '';
	if (s === '' || s.includes(':')) return parseGroupWeights(s);
	return s.split(',').map((n) => ({ name: n.trim(), weight: 1 }));
}

/**
 * Reads a "Priority Groups" fixedCollection value, `{ group: [{ name: 'high', weight: 5 }, ...] }`,
 * rows in order (highest priority first). Names are trimmed; a weight may come as a number or a
 * numeric string (an expression). Throws InputError for a value of another shape, a row without a
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
		const r = (row ?? {}) as { name?: unknown; weight?: unknown };
		const name = typeof r.name === 'string' ? r.name.trim() : '';
		if (name === '') throw new InputError(`Priority groups: group ${i + 1} has no name`);
		const weight = typeof r.weight === 'string' && r.weight.trim() !== '' ? Number(r.weight) : r.weight;
		if (typeof weight !== 'number' || !Number.isInteger(weight))
			throw new InputError(`Priority groups: the weight of "${name}" must be a whole number (got ${JSON.stringify(r.weight)})`);
		return { name, weight };
	});
}
