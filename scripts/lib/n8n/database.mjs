// The Postgres server the harness gives each n8n instance a database on (n8n's own tables, not the
// ledger's). Uses `pg` (a devDependency), loaded on first use.

/**
 * The server's connection parts from a URL or from { host, port, user, password, database }, with
 * the defaults 127.0.0.1, 5432, postgres, no password, postgres.
 */
export function parseDbUrl(urlOrParts) {
	if (typeof urlOrParts !== 'string') {
		return {
			host: urlOrParts.host ?? '127.0.0.1',
			port: Number(urlOrParts.port ?? 5432),
			user: urlOrParts.user ?? 'postgres',
			password: urlOrParts.password ?? '',
			database: urlOrParts.database ?? 'postgres',
		};
	}
	const u = new URL(urlOrParts);
	return {
		host: u.hostname || '127.0.0.1',
		port: Number(u.port || 5432),
		user: decodeURIComponent(u.username || 'postgres'),
		password: decodeURIComponent(u.password || ''),
		database: decodeURIComponent(u.pathname.replace(/^\//, '') || 'postgres'),
	};
}

/** A postgres:// URL of connection parts (user and password URL-encoded). */
export function partsToUrl(p) {
	const auth = p.password ? `${encodeURIComponent(p.user)}:${encodeURIComponent(p.password)}` : encodeURIComponent(p.user);
	return `postgres://${auth}@${p.host}:${p.port}/${encodeURIComponent(p.database)}`;
}

/** Runs `fn(client)` on a connection of its own to `parts` (10 s to connect), closed afterwards. */
async function withAdmin(parts, fn) {
	const { default: pg } = await import('pg');
	const client = new pg.Client({ ...parts, connectionTimeoutMillis: 10_000 });
	client.on('error', () => undefined);
	await client.connect();
	try {
		return await fn(client);
	} finally {
		await client.end().catch(() => undefined);
	}
}


/** Creates the database `name` on the server `parts` (the name is quoted, not checked). */
export async function createDatabase(parts, name) {
	await withAdmin(parts, (c) => c.query(`CREATE DATABASE "${name}"`));
}

/** Drops the database `name` on the server `parts`, ending its sessions (WITH (FORCE)). */
export async function dropDatabase(parts, name) {
	await withAdmin(parts, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}
