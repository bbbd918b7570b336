/**
 * The one way this package shortens text: cutText() never splits a UTF-16 surrogate pair, so a cut
 * string is always valid Unicode (a lone surrogate would make Postgres reject the JSON as a whole,
 * SQLSTATE 22P02, and with it the batch). Every place that shortens a message, reason or preview
 * goes through here; test/unit/text.test.ts puts a surrogate pair across each limit.
 */

/**
 * The longest prefix of `text` of at most `maxUnits` UTF-16 code units that ends on a code-point
 * boundary. `maxUnits` below 0 counts as 0. Text already within the limit is returned unchanged.
 */
export function cutText(text: string, maxUnits: number): string {
	const max = Math.max(0, Math.trunc(maxUnits));
	if (text.length <= max) return text;
	let end = max;
	const last = text.charCodeAt(end - 1);
	// A high surrogate as the last unit kept: its low half would be cut off, so drop it too.
	if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
	return text.slice(0, end);
}

/** cutText() for any value: strings as they are, anything else through String(). */
export function cutAny(value: unknown, maxUnits: number): string {
	return cutText(typeof value === 'string' ? value : String(value), maxUnits);
}

/** A UTF-16 surrogate without its other half (not valid Unicode; Postgres' jsonb refuses it, 22P02). */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * `text` made storable as Postgres text or jsonb, for diagnostic text that the package keeps but
 * may shorten anyway (a failure's error message, a confirmation's or resolution's reason, a node
 * name in an event's context): each NUL (which Postgres' text and jsonb refuse: 22021 / 22P05) and
 * each lone UTF-16 surrogate (not valid Unicode: 22P02 in jsonb) becomes U+FFFD, the Unicode
 * replacement character (the Unicode Standard, section 3.9, "U+FFFD Substitution"), then it is cut
 * with cutText(). Never for keys, references, requests, payloads or responses: those are refused
 * with an item error instead (src/keyText.ts, checkOptionalText, src/json/canonical.ts).
 */
export function storableText(text: string, maxUnits: number): string {
	return cutText(text.replace(LONE_SURROGATES, '\uFFFD').split('\u0000').join('\uFFFD'), maxUnits);
}
