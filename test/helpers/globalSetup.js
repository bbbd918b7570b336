// Integration tests need a real Postgres. `npm test` (scripts/test.mjs) provides one through
// DATABASE_URL (the machine's server, or an embedded one on a fresh machine); run directly with
// jest, the default is the local server.
const { Client } = require('pg');

module.exports = async () => {
	const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
	process.env.DATABASE_URL = url;
	const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
	try {
		await client.connect();
		await client.query('SELECT 1');
	} catch (e) {
		throw new Error(`Integration tests need Postgres at ${url.replace(/:[^:@/]+@/, ':***@')}: ${e.message}. Run them with "npm test", which starts an embedded Postgres when none is configured.`);
	} finally {
		await client.end().catch(() => undefined);
	}
};
