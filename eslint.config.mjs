// The non-Cloud config: this package needs a Postgres driver (bundled into dist at build time).
import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

export default [
	...configWithoutCloudSupport,
	{ ignores: ['test/**', 'scripts/**', 'bench/**', 'jest.config.js'] },
	{
		// src/ is the core, which knows nothing of n8n (it is tested against plain Postgres). Its
		// errors are turned into NodeOperationError at the node boundary (nodes/shared/items.ts).
		files: ['src/**/*.ts'],
		rules: { '@n8n/community-nodes/require-node-api-error': 'off' },
	},
	{
		// No node of this package is an AI tool: n8n hands an agent only output 0 (Not Recorded in
		// version 2), so every other outcome would be lost, and the write-side nodes must not be
		// callable by an agent at all. usableAsTool only accepts true, so the rule that asks for it is
		// off; test/engine/fail-closed.test.ts checks that no description sets it.
		files: ['nodes/**/*.ts'],
		rules: { '@n8n/community-nodes/node-usable-as-tool': 'off' },
	},
];
