/**
 * The only place that loads third-party runtime code. `npm run build` bundles this file (with pg
 * and canonicalize inlined) into dist/src/vendor.js, so the published package has no runtime
 * dependencies of its own and cannot clash with the modules n8n ships.
 */
import pg from 'pg';
import canonicalize from 'canonicalize';

export const Pool = pg.Pool;
export const Client = pg.Client;
export { canonicalize };
