// The engine tests run the BUILT nodes from dist/, as n8n loads them: build first (about 5 s), then
// check Postgres like the integration project does. ENGINE_TEST_SKIP_BUILD=1 reuses an existing dist/.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const integrationSetup = require('../helpers/globalSetup.js');

module.exports = async () => {
	if (process.env.ENGINE_TEST_SKIP_BUILD !== '1') {
		const root = path.resolve(__dirname, '../..');
		execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
	}
	await integrationSetup();
};
