/**
 * An empty field's placeholder must not read like a value. n8n shows a string parameter's
 * placeholder in grey inside the empty field; a bare `payment` there looks filled in, and a builder
 * leaves it and runs into "Resource is required". So every text placeholder starts with "e.g. ",
 * a JSON placeholder is an expression (`={{ … }}`), and a collection's is its "Add …" button.
 */
import type { INodeProperties } from 'n8n-workflow';
import { ALL_NODES } from '../../helpers/nodeTypes';

type Found = { node: string; name: string; type: string; placeholder: string };

/** Every parameter with a placeholder, nested ones (collections, fixedCollection values) included. */
function placeholders(node: string, props: readonly INodeProperties[], out: Found[] = []): Found[] {
	for (const p of props) {
		if (typeof p.placeholder === 'string') out.push({ node, name: p.name, type: p.type, placeholder: p.placeholder });
		for (const o of (p.options ?? []) as unknown[]) {
			const opt = o as { values?: INodeProperties[]; type?: string };
			if (Array.isArray(opt.values)) placeholders(node, opt.values, out);
			else if (typeof opt.type === 'string') placeholders(node, [opt as INodeProperties], out);
		}
	}
	return out;
}

const all = ALL_NODES.flatMap((n) => placeholders(n.description.name, n.description.properties));

/** What is wrong with one placeholder, or null. */
function problem(f: Found): string | null {
	if (f.type === 'string' && !f.placeholder.startsWith('e.g. ')) return 'a text placeholder must start with "e.g. "';
	if (f.type === 'json' && !f.placeholder.startsWith('={{')) return 'a JSON placeholder must be an expression';
	if ((f.type === 'collection' || f.type === 'fixedCollection') && !/^Add /.test(f.placeholder)) return 'a collection placeholder names its button ("Add …")';
	return null;
}

test('the check sees a value-like placeholder (so it can fail)', () => {
	expect(problem({ node: 'x', name: 'resource', type: 'string', placeholder: 'payment' })).not.toBeNull();
	expect(problem({ node: 'x', name: 'resource', type: 'string', placeholder: 'e.g. payment' })).toBeNull();
});

test("Reserve's Resource, Action and Target show an example, not a value", () => {
	const reserve = all.filter((f) => f.node === 'reserveOperation');
	for (const name of ['resource', 'action', 'target']) {
		expect(reserve.find((f) => f.name === name)?.placeholder).toMatch(/^e\.g\. \S/);
	}
});

test('no placeholder of any node reads like a value', () => {
	expect(all.length).toBeGreaterThan(20);
	expect(all.map((f) => ({ ...f, problem: problem(f) })).filter((f) => f.problem)).toEqual([]);
});
