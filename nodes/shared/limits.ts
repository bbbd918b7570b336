/**
 * A node parameter's number bounds from LIMITS (src/limits.ts), so the editor's minValue/maxValue
 * and the core's check are the same numbers.
 */
import type { Limit } from '../../src/limits';

/** `{ minValue, maxValue }` for a number parameter's typeOptions. */
export function numberRange(limit: Limit): { minValue: number; maxValue: number } {
	return { minValue: limit.min, maxValue: limit.max };
}

export { LIMITS, rangeText, TEXT_LIMITS } from '../../src/limits';
