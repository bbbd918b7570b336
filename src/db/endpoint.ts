/**
 * Where and how the nodes connect: the credential's fields or connection string, resolved into an
 * explicit endpoint that pg uses as it is.
 *
 * - Connection strings are parsed with `pg-connection-string` (the parser pg itself uses), never
 *   handed to pg, so nothing in them can override what this module decided.
 * - SSL: the credential's SSL field and a connection string's `sslmode` / `ssl` are both honoured
 *   and the STRICTER wins, in libpq's order disable < allow < prefer < require < verify-ca <
 *   verify-full. pg cannot fall back from TLS to plain text, so `allow` and `prefer` encrypt like
 *   `require` (a server without SSL is refused). pg's own `ssl=true` means verify-full and
 *   `sslmode=no-verify` means require.
 * - No ambient credentials: host, port, database, user and password always come from the
 *   credential. An empty password is sent as an empty password (never PGPASSWORD, never
 *   ~/.pgpass); an empty user or host is refused (never PGUSER / PGHOST / the OS user).
 * - Parameters that would read files on the n8n host (sslcert, sslkey, sslrootcert, sslcrl,
 *   passfile, service) are refused with a clear message, and so is any parameter not listed in
 *   ALLOWED_PARAMS. `options` (e.g. -c timezone=...) is passed to the server as given: it comes
 *   from the credential, never from PGOPTIONS.
 *
 * Errors: resolveEndpoint throws EndpointError, whose message never contains the password or the
 * connection string.
 */
import { cutAny, cutText } from '../text';
import { parseConnectionString } from '../vendor';
import { CoreError } from '../errors';

/** libpq's sslmode values, weakest first. */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** A connection problem found before connecting (bad connection string, missing user, ...). Not retryable: the credential must change. */
export class EndpointError extends CoreError {
	readonly retryable = false;
	constructor(message: string) {
		super(message);
		this.name = 'EndpointError';
	}
}

/** The fully resolved target of a connection. */
export interface Endpoint {
	host: string;
	port: number;
	database: string;
	user: string;
	/** Exactly what is sent; '' is an empty password. */
	password: string;
	/** The effective SSL mode (the stricter of the credential's and the connection string's). */
	sslMode: SslMode;
	/** Which setting decided sslMode. */
	sslModeFrom: 'credential' | 'connection string';
	/** PEM CA certificate(s) for verify-ca / verify-full; undefined means the system's CAs. */
	ca?: string;
	/** The connection string's `options` startup parameter (e.g. "-c timezone=UTC"), if any. */
	options?: string;
}

/** What the credential provides (a subset of ConnectionConfig, see pool.ts). */
export interface EndpointInput {
	connectionString?: string;
	host?: string;
	port?: number;
	database?: string;
	user?: string;
	password?: string;
	ssl?: SslMode | string;
	ca?: string;
}

/** The stricter of two SSL modes. */
export function stricterSslMode(a: SslMode, b: SslMode): SslMode {
	return SSL_MODES.indexOf(a) >= SSL_MODES.indexOf(b) ? a : b;
}

/** Parses a credential's SSL value; unknown values are an error (never silently "disable"). */
export function toSslMode(value: unknown, where: string): SslMode {
	if (value === undefined || value === null || value === '') return 'disable';
	const v = String(value).toLowerCase();
	if ((SSL_MODES as readonly string[]).includes(v)) return v as SslMode;
	throw new EndpointError(`${where}: unknown SSL mode "${cutAny(value, 40)}" (use one of ${SSL_MODES.join(', ')})`);
}

/** Query parameters a connection string may carry; anything else is refused. */
// application_name is accepted and ignored: the nodes name their sessions themselves.
const ALLOWED_PARAMS = new Set(['sslmode', 'ssl', 'host', 'port', 'user', 'password', 'dbname', 'options', 'application_name']);
const FILE_PARAMS = new Set(['sslcert', 'sslkey', 'sslrootcert', 'sslcrl', 'sslcrldir', 'sslpassword', 'passfile', 'service', 'servicefile']);

interface ParsedString {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
	sslMode?: SslMode;
	options?: string;
}

/**
 * Parses a postgres:// or postgresql:// URL with pg-connection-string. Throws EndpointError for a
 * malformed string, another scheme, a refused parameter or an unknown sslmode.
 */
export function parseUrl(connectionString: string): ParsedString {
	const s = connectionString.trim();
	if (!s) throw new EndpointError('The connection string is empty');
	if (!/^postgres(ql)?:\/\//i.test(s)) {
		throw new EndpointError('The connection string must start with postgres:// or postgresql:// (key=value strings and socket paths are not supported)');
	}
	let url: URL;
	try {
		url = new URL(s);
	} catch {
		throw new EndpointError('The connection string is not a valid URL (check for unencoded characters such as @, : or / in the user name or password)');
	}
	for (const key of url.searchParams.keys()) {
		if (FILE_PARAMS.has(key)) {
			throw new EndpointError(
				`The connection string parameter "${key}" is not supported: it would read a file on the n8n host. Put the CA certificate into the credential's CA Certificate field.`,
			);
		}
		if (!ALLOWED_PARAMS.has(key)) {
			throw new EndpointError(`The connection string parameter "${cutText(key, 40)}" is not supported (supported: ${[...ALLOWED_PARAMS].join(', ')})`);
		}
	}
	let parsed: ReturnType<typeof parseConnectionString>;
	try {
		parsed = parseConnectionString(s);
	} catch {
		throw new EndpointError('The connection string could not be parsed');
	}
	const raw = parsed as Record<string, unknown>;
	let sslMode: SslMode | undefined;
	const mode = url.searchParams.get('sslmode');
	if (mode !== null) {
		if (mode === 'no-verify') sslMode = 'require';
		else sslMode = toSslMode(mode, 'The connection string');
	}
	const ssl = url.searchParams.get('ssl');
	if (ssl !== null) {
		// pg's meaning: ssl=true verifies the certificate and the host name (verify-full).
		const fromSsl: SslMode | undefined = /^(true|1)$/i.test(ssl) ? 'verify-full' : /^(false|0)$/i.test(ssl) ? 'disable' : ssl === 'no-verify' ? 'require' : undefined;
		if (!fromSsl) throw new EndpointError(`The connection string has an unknown ssl value "${cutText(ssl, 40)}" (use true or false, or sslmode=...)`);
		sslMode = sslMode ? stricterSslMode(sslMode, fromSsl) : fromSsl;
	}
	const portText = raw.port === undefined || raw.port === null || raw.port === '' ? '5432' : String(raw.port);
	if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
		throw new EndpointError(`The connection string has an invalid port "${cutText(portText, 20)}"`);
	}
	const user = typeof raw.user === 'string' ? raw.user : '';
	const dbname = url.searchParams.get('dbname');
	return {
		host: typeof raw.host === 'string' ? raw.host : '',
		port: Number(portText),
		database: dbname ?? (typeof raw.database === 'string' && raw.database ? raw.database : ''),
		user,
		password: typeof raw.password === 'string' ? raw.password : '',
		sslMode,
		options: url.searchParams.get('options') || undefined,
	};
}

/**
 * Resolves a credential into an Endpoint. The connection string (when given) supplies host, port,
 * database, user and password; the effective SSL mode is the stricter of the credential's SSL
 * field and the string's sslmode/ssl. Throws EndpointError when something is missing or refused.
 */
export function resolveEndpoint(input: EndpointInput): Endpoint {
	const credentialMode = toSslMode(input.ssl, "The credential's SSL field");
	let host: string;
	let port: number;
	let database: string;
	let user: string;
	let password: string;
	let sslMode = credentialMode;
	let sslModeFrom: Endpoint['sslModeFrom'] = 'credential';
	let options: string | undefined;
	if (input.connectionString !== undefined) {
		const p = parseUrl(input.connectionString);
		({ host, port, database, user, password, options } = p);
		if (p.sslMode && stricterSslMode(p.sslMode, credentialMode) !== credentialMode) {
			sslMode = p.sslMode;
			sslModeFrom = 'connection string';
		}
	} else {
		host = String(input.host ?? '').trim();
		port = Number(input.port ?? 5432);
		if (!Number.isInteger(port) || port < 1 || port > 65535) throw new EndpointError(`Invalid port ${cutAny(input.port, 20)}: use 1 to 65535`);
		database = String(input.database ?? '').trim();
		user = String(input.user ?? '').trim();
		password = String(input.password ?? '');
	}
	if (!host) throw new EndpointError('No host: the credential must name the database host');
	if (host.startsWith('/')) throw new EndpointError('Unix socket paths are not supported: use a host name or IP address');
	if (!user) throw new EndpointError('No user: the credential must name the database user (the environment of the n8n host is never used)');
	if (!database) database = user; // libpq's default, made explicit
	for (const [what, v] of [['host', host], ['user', user], ['database', database]] as const) {
		// eslint-disable-next-line no-control-regex
		if (/[\u0000-\u001f\u007f]/.test(v)) throw new EndpointError(`The ${what} contains a control character`);
	}
	const ca = input.ca && input.ca.trim() ? input.ca : undefined;
	return { host, port, database, user, password, sslMode, sslModeFrom, ca, ...(options ? { options } : {}) };
}

/** pg's `ssl` option for an effective mode. */
export function toPgSsl(e: Pick<Endpoint, 'sslMode' | 'ca'>): false | { rejectUnauthorized: boolean; ca?: string; checkServerIdentity?: () => undefined } {
	switch (e.sslMode) {
		case 'disable':
			return false;
		case 'allow':
		case 'prefer':
		case 'require':
			return { rejectUnauthorized: false };
		case 'verify-ca':
			// The chain is checked against the CA; the host name is not (libpq's verify-ca).
			return { rejectUnauthorized: true, ca: e.ca, checkServerIdentity: () => undefined };
		case 'verify-full':
			return { rejectUnauthorized: true, ca: e.ca };
	}
}
