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
];
