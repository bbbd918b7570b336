// The non-Cloud config: this package needs a Postgres driver (bundled into dist at build time).
import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

export default [
	...configWithoutCloudSupport,
	{ ignores: ['test/**', 'scripts/**', 'bench/**', 'jest.config.js'] },
	{
		// src/ is the core, which knows nothing of n8n (it is tested against plain Postgres). Its
		// errors are turned into NodeOperationError at the node boundary (nodes/shared/items.ts).
		files: ['src/**/*.ts'],
		rules: {
			'@n8n/community-nodes/require-node-api-error': 'off',
			// The wall: the core imports nothing of n8n and nothing of the nodes.
			'no-restricted-imports': [
				'error',
				{
					paths: [
						{ name: 'n8n-workflow', message: 'src/ is the core and knows nothing of n8n: move this code to nodes/.' },
						{ name: 'n8n-core', message: 'src/ is the core and knows nothing of n8n: move this code to nodes/.' },
					],
					patterns: [
						{ group: ['n8n-workflow/*', 'n8n-core/*', '@n8n/*'], message: 'src/ is the core and knows nothing of n8n.' },
						{ group: ['**/nodes/**'], message: 'src/ must not import from nodes/: the nodes depend on the core, never the reverse.' },
					],
				},
			],
		},
	},
	{
		// nodes/ sends no SQL: every statement lives in src/ (which calls one schema function). A
		// string or template in nodes/ that starts a statement is an error; test/unit/layout.test.ts
		// checks the same by reading the files.
		files: ['nodes/**/*.ts'],
		rules: {
			'no-restricted-syntax': [
				'error',
				{
					selector: 'Literal[value=/\\b(SELECT\\s|INSERT\\s+INTO|DELETE\\s+FROM|UPDATE\\s+\\S+\\s+SET|CREATE\\s+TABLE|CREATE\\s+FUNCTION)/]',
					message: 'nodes/ holds no SQL: put the statement in src/ and call it from the node.',
				},
				{
					selector: 'TemplateElement[value.raw=/\\b(SELECT\\s|INSERT\\s+INTO|DELETE\\s+FROM|UPDATE\\s+\\S+\\s+SET|CREATE\\s+TABLE|CREATE\\s+FUNCTION)/]',
					message: 'nodes/ holds no SQL: put the statement in src/ and call it from the node.',
				},
			],
		},
	},
	{
		// A node imports the core (src/) and nodes/shared, never a sibling node's files.
		files: ['nodes/*/*.ts'],
		ignores: ['nodes/shared/**'],
		rules: {
			'no-restricted-imports': [
				'error',
				{ patterns: [{ group: ['../[A-Z]*', '../[A-Z]*/**'], caseSensitive: true, message: 'A node imports src/ and nodes/shared only, never a sibling node: move the shared piece to nodes/shared or src/.' }] },
			],
		},
	},
	{
		// Numeric defaults and ranges are read from LIMITS (src/limits.ts: `default: LIMITS.x.default`,
		// `typeOptions: numberRange(LIMITS.x)`), which these two rules cannot see through (they look
		// for literals). TypeScript requires `default` on every INodeProperties, and
		// test/unit/nodes/description-pin.test.ts pins each resolved default and typeOptions.
		files: ['nodes/**/*.ts', 'credentials/**/*.ts'],
		rules: {
			'n8n-nodes-base/node-param-default-missing': 'off',
			'n8n-nodes-base/node-param-type-options-missing-from-limit': 'off',
		},
	},
	{
		// No node of this package is an AI tool: n8n hands an agent only output 0 (Unrecorded), so
		// every other outcome would be lost, and the write-side nodes must not be
		// callable by an agent at all. usableAsTool only accepts true, so the rule that asks for it is
		// off; test/engine/fail-closed-editor.test.ts checks that no description sets it.
		files: ['nodes/**/*.ts'],
		rules: { '@n8n/community-nodes/node-usable-as-tool': 'off' },
	},
];
