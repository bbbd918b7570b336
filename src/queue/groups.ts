/**
 * The "Groups and weights" text both Priority Dequeue and its trigger accept, parsed once here.
 */
import { InputError } from '../errors';
import { DEFAULT_GROUPS, type GroupWeight } from './states';

/**
 * Parses "high:5, normal:2, low:1" (highest priority first; empty text: DEFAULT_GROUPS). Weights
 * are checked later by checkGroups (src/queue/dequeue.ts). Throws InputError for a part that is not
 * name:weight.
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
