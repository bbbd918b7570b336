/**
 * The one rule for key-like text: operation keys and their parts, custom keys, targets, queue
 * names, priority groups, dedupe keys. Such text identifies things and is compared byte for byte,
 * so it must not hold characters that are invisible, that Postgres refuses in text (NUL: 22P05 /
 * 22021, which would fail the whole batch), or that are not valid Unicode:
 *   - C0 controls U+0000..U+001F (NUL, tab, line breaks, ...), DEL U+007F, C1 controls U+0080..U+009F;
 *   - lone UTF-16 surrogates.
 * Callers turn the problem into the shared InputError (src/errors.ts).
 */

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Describes what is wrong with `text` as key-like text, or returns null when it is fine. */
export function keyTextProblem(text: string): string | null {
	const m = CONTROL.exec(text);
	if (m) {
		const code = m[0].charCodeAt(0);
		if (code === 0) return `contains a NUL character (a control character) at position ${m.index + 1}`;
		const name = code === 9 ? 'tab' : code === 10 || code === 13 ? 'line break' : `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
		return `contains a control character (${name}) at position ${m.index + 1}`;
	}
	if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate, which is not valid Unicode';
	return null;
}

/** Throws `makeError(`${what} ${problem}`)` when `text` is not valid key-like text; returns it otherwise. */
export function checkKeyText<E extends Error>(text: string, what: string, makeError: (message: string) => E): string {
	const problem = keyTextProblem(text);
	if (problem) throw makeError(`${what} ${problem}`);
	return text;
}
