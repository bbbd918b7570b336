/** Three projects: unit (no database), integration (real Postgres), e2e (real n8n). */
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
		{ ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
	],
};
