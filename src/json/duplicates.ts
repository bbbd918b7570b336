/**
 * Duplicate member names in JSON text.
 *
 * JSON.parse keeps the last of two members with one name and drops the other without a word, so
 * `{"amount": 100, "amount": 9900}` and `{"amount": 9900}` would get one fingerprint, and the value
 * a workflow builder sees in the text is not the one the ledger stores. I-JSON (RFC 7493 §2.3), which
 * RFC 8785 canonical JSON requires, forbids duplicate names; this module finds them so the caller can
 * refuse the text before anything is written.
 *
 * Names are compared after unescaping (`"a"` and `"\u0061"` are one name), as JSON.parse would.
 */

/** Where a duplicate name was found: a JSONPath-like `path` of the object, and the `name`. */
export interface DuplicateMember {
	path: string;
	name: string;
}

function pathOf(trail: Array<string | number>): string {
	return trail.reduce<string>(
		(p, seg) => (typeof seg === 'number' ? `${p}[${seg}]` : /^[A-Za-z_$][\w$]*$/.test(seg) ? `${p}.${seg}` : `${p}[${JSON.stringify(seg)}]`),
		'$',
	);
}

/**
 * Returns the first member name that occurs twice in one object of `text`, or null when there is
 * none. `text` must already be valid JSON (call it after JSON.parse succeeded): it is scanned once,
 * left to right, in time linear in its length, without building the value.
 */
export function findDuplicateMember(text: string): DuplicateMember | null {
	// One frame per open object or array. Objects hold the names seen so far and the name whose
	// value is being read; arrays hold the index of the element being read.
	type Frame = { kind: 'object'; names: Set<string>; current?: string } | { kind: 'array'; index: number };
	const stack: Frame[] = [];
	const trail = (): Array<string | number> =>
		stack.flatMap((f): Array<string | number> => (f.kind === 'array' ? [f.index] : f.current === undefined ? [] : [f.current]));
	let expectName = false;
	for (let i = 0; i < text.length; i++) {
		const c = text[i];
		if (c === '"') {
			// A string token: find its closing quote (a backslash escapes the next character).
			let j = i + 1;
			while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
			const top = stack[stack.length - 1];
			if (expectName && top?.kind === 'object') {
				const name = JSON.parse(text.slice(i, j + 1)) as string;
				if (top.names.has(name)) {
					top.current = undefined;
					return { path: pathOf(trail()), name };
				}
				top.names.add(name);
				top.current = name;
				expectName = false;
			}
			i = j;
		} else if (c === '{') {
			stack.push({ kind: 'object', names: new Set() });
			expectName = true;
		} else if (c === '[') {
			stack.push({ kind: 'array', index: 0 });
		} else if (c === '}' || c === ']') {
			stack.pop();
		} else if (c === ',') {
			const top = stack[stack.length - 1];
			if (top?.kind === 'object') expectName = true;
			else if (top?.kind === 'array') top.index++;
		}
	}
	return null;
}
