/**
 * Four projects: unit (no database), integration (real Postgres), engine (n8n-core's WorkflowExecute
 * running the built nodes from dist/ on real Postgres), e2e (real n8n).
 */
const base = {
	preset: 'ts-jest',
	testEnvironment: 'node',
	transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
	modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/.cache/'],
};
module.exports = {
	projects: [
		{ ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
		{
			...base,
			displayName: 'integration',
			testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
			globalSetup: '<rootDir>/test/helpers/globalSetup.js',
		},
		{
			...base,
			displayName: 'engine',
			testMatch: ['<rootDir>/test/engine/**/*.test.ts'],
			globalSetup: '<rootDir>/test/engine/globalSetup.js',
			// dist/ holds what is under test here; only its package.json copy is hidden (name clash).
			modulePathIgnorePatterns: ['<rootDir>/dist/package\\.json$', '<rootDir>/.cache/'],
		},
		{ ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
	],
};
