/**
 * The only place that loads third-party runtime code. `npm run build` bundles this file (with pg,
 * pg-connection-string and canonicalize inlined) into dist/src/vendor.js, so the published package
 * has no runtime dependencies of its own and cannot clash with the modules n8n ships. The bundled
 * packages, versions and licences are listed in dist/THIRD_PARTY_NOTICES.md (scripts/bundle.mjs).
 */
import pg from 'pg';
import canonicalize from 'canonicalize';
import { parse as parseConnectionString } from 'pg-connection-string';

export const Pool = pg.Pool;
export const Client = pg.Client;
/** pg's own SQL string literal quoting (doubles quotes; E'' with doubled backslashes when needed). */
export const escapeLiteral: (text: string) => string = pg.escapeLiteral;
/** The text pg sends for a query parameter (arrays as Postgres array literals, objects as JSON). */
export const prepareValue: (value: unknown) => unknown = (pg as unknown as { utils: { prepareValue: (v: unknown) => unknown } }).utils.prepareValue;
export { canonicalize, parseConnectionString };

/** Startup parameters pg would otherwise take from PG* environment variables when not configured. */
const AMBIENT_STARTUP_PARAMS = ['options', 'replication', 'client_encoding'] as const;

/**
 * pg's Client without ambient settings: pg reads PGOPTIONS and PGREPLICATION from the n8n host's
 * environment when the config leaves them unset and would send them at startup. This client
 * clears whatever the config did not set itself. Every Client and Pool of this package uses it.
 */
export class IsolatedClient extends pg.Client {
	constructor(config?: pg.ClientConfig) {
		super(config);
		const params = (this as unknown as { connectionParameters: Record<string, unknown> }).connectionParameters;
		const given = (config ?? {}) as Record<string, unknown>;
		for (const k of AMBIENT_STARTUP_PARAMS) if (!given[k]) params[k] = undefined;
	}
}
