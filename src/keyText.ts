/**
 * The one rule for key-like text: operation keys and their parts, custom keys, targets, queue
 * names, priority groups, dedupe keys. Such text identifies things and is compared byte for byte,
 * so it must not hold characters that Postgres refuses in text (NUL: 22P05 / 22021, which would
 * fail the whole batch), that are not valid Unicode, or that make two keys look the same while
 * they differ (a key copied with a zero-width space or a no-break space would be a second
 * operation, and a second write):
 *   - control characters (General_Category Cc): U+0000..U+001F (NUL, tab, line breaks, ...), DEL
 *     U+007F, C1 controls U+0080..U+009F;
 *   - white space other than the plain space U+0020 (Unicode property White_Space: U+00A0 no-break
 *     space, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000);
 *   - invisible characters (Unicode property Default_Ignorable_Code_Point: U+00AD soft hyphen,
 *     U+200B..U+200F zero-width and direction marks, U+2060..U+206F, U+FEFF, variation selectors,
 *     tags, Hangul fillers, ...);
 *   - lone UTF-16 surrogates.
 * Refused, never removed or replaced: a key is an identity, and silently changing one would make a
 * retry of it a different operation. Sources: Unicode UTS #39 (Unicode Security Mechanisms),
 * section 3.1 "General Security Profile for Identifiers", which excludes Default_Ignorable_Code_Point
 * and White_Space from identifiers; the properties from the Unicode Character Database
 * (PropList.txt, DerivedCoreProperties.txt). Look-alikes made of visible letters of other scripts
 * (UTS #39 confusables, e.g. Cyrillic "а" for Latin "a") are not detected.
 * The same list is schema/functions/common/ol_refused_chars.sql, which the SQL entry points apply;
 * test/unit/keyText.test.ts checks REFUSED_RANGES against the properties of this Node's Unicode
 * version and test/integration/security/sql-bounds.test.ts checks the SQL side refuses the same.
 * Callers turn the problem into the shared InputError (src/errors.ts).
 */

/** The refused code points (inclusive ranges), as listed above. */
export const REFUSED_RANGES: ReadonlyArray<readonly [number, number]> = [
	[0x0000, 0x001f],
	[0x007f, 0x00a0],
	[0x00ad, 0x00ad],
	[0x034f, 0x034f],
	[0x061c, 0x061c],
	[0x115f, 0x1160],
	[0x1680, 0x1680],
	[0x17b4, 0x17b5],
	[0x180b, 0x180f],
	[0x2000, 0x200f],
	[0x2028, 0x202f],
	[0x205f, 0x206f],
	[0x3000, 0x3000],
	[0x3164, 0x3164],
	[0xfe00, 0xfe0f],
	[0xfeff, 0xfeff],
	[0xffa0, 0xffa0],
	[0xfff0, 0xfff8],
	[0x1bca0, 0x1bca3],
	[0x1d173, 0x1d17a],
	[0xe0000, 0xe0fff],
];

const hex = (c: number) => (c > 0xffff ? `\\u{${c.toString(16)}}` : `\\u${c.toString(16).padStart(4, '0')}`);
const REFUSED = new RegExp(`[${REFUSED_RANGES.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('')}]`, 'u');
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** U+XXXX of a code point. */
function codePointName(c: number): string {
	return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Describes what is wrong with `text` as key-like text, or returns null when it is fine. */
export function keyTextProblem(text: string): string | null {
	// Printable ASCII (U+0020..U+007E) holds none of the refused code points and no surrogate; most
	// keys are such text, and this test costs a fraction of the two below (per item of every batch).
	if (PRINTABLE_ASCII.test(text)) return null;
	// Lone surrogates first: the u-flag pattern below reads text as code points.
	if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate, which is not valid Unicode';
	const m = REFUSED.exec(text);
	if (!m) return null;
	const code = m[0].codePointAt(0) as number;
	const at = `at position ${m.index + 1}`;
	if (code === 0) return `contains a NUL character (a control character) ${at}`;
	if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) {
		const name = code === 9 ? 'tab' : code === 10 || code === 13 ? 'line break' : codePointName(code);
		return `contains a control character (${name}) ${at}`;
	}
	if (/\p{White_Space}/u.test(m[0])) {
		return `contains white space other than the plain space (${codePointName(code)}${code === 0xa0 ? ', no-break space' : ''}) ${at}; it would look like another key`;
	}
	return `contains an invisible character (${codePointName(code)}${code === 0x200b ? ', zero-width space' : ''}) ${at}; it would look like another key`;
}

/** Throws `makeError(`${what} ${problem}`)` when `text` is not valid key-like text; returns it otherwise. */
export function checkKeyText<E extends Error>(text: string, what: string, makeError: (message: string) => E): string {
	const problem = keyTextProblem(text);
	if (problem) throw makeError(`${what} ${problem}`);
	return text;
}
