/**
 * A locally made certificate authority and a server certificate for 127.0.0.1 / localhost (in the
 * subjectAltName), made with the openssl command line in a temporary folder. For SSL tests
 * against a private Postgres only.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Ca {
	cert: string;
	key: string;
}

function openssl(dir: string, args: string[]): void {
	try {
		execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
	} catch (e) {
		throw new Error(`openssl ${args[0]} failed: ${(e as { stderr?: Buffer }).stderr?.toString() ?? (e as Error).message}`);
	}
}

function inTemp<T>(fn: (dir: string) => T): T {
	const dir = mkdtempSync(path.join(os.tmpdir(), 'ol-tls-'));
	try {
		return fn(dir);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

/** A self-signed CA (EC P-256, 2 days). */
export function makeCa(name: string): Ca {
	return inTemp((dir) => {
		openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
		return { cert: readFileSync(path.join(dir, 'ca.crt'), 'utf8'), key: readFileSync(path.join(dir, 'ca.key'), 'utf8') };
	});
}

/** A server certificate signed by `ca` for the given host names and IP addresses. */
export function makeServerCert(ca: Ca, names: { dns?: string[]; ip?: string[] } = { dns: ['localhost'], ip: ['127.0.0.1'] }): { cert: string; key: string } {
	return inTemp((dir) => {
		writeFileSync(path.join(dir, 'ca.crt'), ca.cert);
		writeFileSync(path.join(dir, 'ca.key'), ca.key, { mode: 0o600 });
		const san = [...(names.dns ?? []).map((d) => `DNS:${d}`), ...(names.ip ?? []).map((i) => `IP:${i}`)].join(',');
		writeFileSync(path.join(dir, 'ext.cnf'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
		openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
		openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf']);
		return { cert: readFileSync(path.join(dir, 'server.crt'), 'utf8'), key: readFileSync(path.join(dir, 'server.key'), 'utf8') };
	});
}
