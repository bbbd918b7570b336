/**
 * endpoint.ts: connection strings parsed with pg-connection-string; the stricter SSL mode wins;
 * nothing is taken from the environment; refused parameters are named.
 */
import { EndpointError, resolveEndpoint, SSL_MODES, stricterSslMode, toPgSsl, type SslMode } from '../../../src/db/endpoint';
import { toPgConfig } from '../../../src/db/pool';

const CREDENTIAL_MODES: SslMode[] = ['disable', 'require', 'verify-ca', 'verify-full'];
/** URL forms and the SSL mode each one asks for (undefined: none). */
const URL_FORMS: Array<[string, SslMode | undefined]> = [
	['', undefined],
	['?sslmode=disable', 'disable'],
	['?sslmode=allow', 'allow'],
	['?sslmode=prefer', 'prefer'],
	['?sslmode=require', 'require'],
	['?sslmode=verify-ca', 'verify-ca'],
	['?sslmode=verify-full', 'verify-full'],
	['?sslmode=no-verify', 'require'],
	['?ssl=true', 'verify-full'],
	['?ssl=1', 'verify-full'],
	['?ssl=false', 'disable'],
	['?ssl=0', 'disable'],
	['?ssl=false&sslmode=require', 'require'],
	['?ssl=true&sslmode=disable', 'verify-full'],
];

describe('resolveEndpoint: the stricter SSL mode wins', () => {
	const cases = CREDENTIAL_MODES.flatMap((cred) =>
		URL_FORMS.flatMap(([suffix, urlMode]) =>
			['postgres', 'postgresql'].map((scheme) => {
				const expected = urlMode ? stricterSslMode(cred, urlMode) : cred;
				return [cred, `${scheme}://u:p@db.example:6543/ledger${suffix}`, expected] as const;
			}),
		),
	);
	it.each(cases)('credential %s + %s -> %s', (cred, url, expected) => {
		const e = resolveEndpoint({ connectionString: url, ssl: cred });
		expect(e.sslMode).toBe(expected);
		expect(SSL_MODES.indexOf(e.sslMode)).toBeGreaterThanOrEqual(SSL_MODES.indexOf(cred));
		expect(e).toMatchObject({ host: 'db.example', port: 6543, database: 'ledger', user: 'u', password: 'p' });
		const ssl = toPgSsl(e);
		if (expected === 'disable') expect(ssl).toBe(false);
		else expect(ssl).toMatchObject({ rejectUnauthorized: expected === 'verify-ca' || expected === 'verify-full' });
	});

	it('weaker URL modes never weaken the credential', () => {
		expect(resolveEndpoint({ connectionString: 'postgres://u@h/d?sslmode=disable', ssl: 'verify-full' }).sslMode).toBe('verify-full');
		expect(resolveEndpoint({ connectionString: 'postgres://u@h/d?sslmode=require', ssl: 'verify-full' }).sslModeFrom).toBe('credential');
		expect(resolveEndpoint({ connectionString: 'postgres://u@h/d?sslmode=require', ssl: 'disable' }).sslModeFrom).toBe('connection string');
	});

	it('verify-ca checks the chain but not the host name; verify-full checks both', () => {
		const ca = toPgSsl({ sslMode: 'verify-ca', ca: 'PEM' }) as { checkServerIdentity?: () => undefined; ca?: string };
		expect(ca.ca).toBe('PEM');
		expect(typeof ca.checkServerIdentity).toBe('function');
		expect(toPgSsl({ sslMode: 'verify-full', ca: 'PEM' })).toEqual({ rejectUnauthorized: true, ca: 'PEM' });
	});
});

describe('resolveEndpoint: refusals', () => {
	const refused: Array<[string, Record<string, unknown>, RegExp]> = [
		['malformed URL', { connectionString: 'postgres://u:p@[bad/db' }, /not a valid URL/],
		['not a URL', { connectionString: 'host=db user=u' }, /must start with postgres:\/\//],
		['empty string', { connectionString: '   ' }, /empty/],
		['unknown sslmode', { connectionString: 'postgres://u@h/d?sslmode=maybe' }, /unknown SSL mode "maybe"/],
		['unknown ssl', { connectionString: 'postgres://u@h/d?ssl=perhaps' }, /unknown ssl value/],
		['sslrootcert reads a file', { connectionString: 'postgres://u@h/d?sslrootcert=/etc/passwd' }, /"sslrootcert" is not supported: it would read a file/],
		['sslkey reads a file', { connectionString: 'postgres://u@h/d?sslkey=/k' }, /"sslkey" is not supported/],
		['passfile', { connectionString: 'postgres://u@h/d?passfile=/p' }, /"passfile" is not supported/],
		['unknown parameter', { connectionString: 'postgres://u@h/d?replication=database' }, /"replication" is not supported/],
		['bad port', { connectionString: 'postgres://u@h:99999/d' }, /not a valid URL|invalid port/],
		['no user in URL', { connectionString: 'postgres://h/d' }, /No user/],
		['no host in URL', { connectionString: 'postgres://u@/d' }, /No host|not a valid URL/],
		['socket path', { connectionString: 'postgres://u@%2Fvar%2Frun%2Fpostgresql/d' }, /Unix socket/],
		['no user in fields', { host: 'h', user: '' }, /No user/],
		['no host in fields', { host: '', user: 'u' }, /No host/],
		['bad port in fields', { host: 'h', user: 'u', port: 0 }, /Invalid port/],
		['unknown credential SSL value', { host: 'h', user: 'u', ssl: 'sometimes' }, /unknown SSL mode/],
		['control character in user', { host: 'h', user: 'a\u0000b' }, /control character/],
	];
	it.each(refused)('%s', (_what, input, message) => {
		let err: unknown;
		try {
			resolveEndpoint(input);
		} catch (e) {
			err = e;
		}
		expect(err).toBeInstanceOf(EndpointError);
		expect((err as Error).message).toMatch(message);
		// Never the connection string (it may carry the password).
		const cs = String(input.connectionString ?? '').trim();
		if (cs) expect((err as Error).message).not.toContain(cs);
	});
});

describe('toPgConfig: nothing ambient', () => {
	const saved = { ...process.env };
	afterEach(() => {
		process.env = { ...saved };
	});

	it('sends an empty password as empty, never PGPASSWORD, and names every parameter', async () => {
		process.env.PGPASSWORD = 'from-the-environment';
		process.env.PGUSER = 'env_user';
		process.env.PGHOST = 'env-host';
		process.env.PGDATABASE = 'env_db';
		process.env.PGSSLMODE = 'disable';
		const cfg = toPgConfig({ host: 'db.example', user: 'alice', password: '', schema: 's', ssl: 'require' }) as Record<string, unknown>;
		expect(cfg).toMatchObject({ host: 'db.example', port: 5432, user: 'alice', database: 'alice', ssl: { rejectUnauthorized: false } });
		expect(cfg.connectionString).toBeUndefined();
		expect(typeof cfg.password).toBe('function');
		expect(await (cfg.password as () => string)()).toBe('');
	});
});
