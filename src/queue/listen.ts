/**
 * A dedicated pg Client for LISTEN (never a pooled connection: LISTEN belongs to one session).
 *
 * Every wait of it is bounded by the credential's Connection Timeout (connectTimeoutMs, default
 * 10000 ms, src/db/bounds.ts): the connection and its handshake (pg's connectionTimeoutMillis),
 * the LISTEN statement's answer, each health probe, and close() (after which the socket is
 * destroyed). The watcher (watcher.ts) treats a failure of any of them as a lost connection and
 * reconnects with capped backoff.
 *
 * While connected, the session only waits for notifications, so a connection that died silently
 * (a network partition, a dead NAT entry, a frozen server: no error, no end) would never be
 * noticed: TCP keepalive (first probe after DEFAULTS.keepAliveIdleMs without traffic; the OS's
 * interval and count after that) catches a peer that is gone, and probe() (`SELECT 1` within the
 * Connection Timeout, sent by the watcher every probe interval) catches one that still accepts
 * packets but does not answer. A failed probe destroys the socket and reports the connection
 * lost; polling finds the work meanwhile.
 */
import type { Client as PgClient } from 'pg';
import { IsolatedClient } from '../vendor';
import { toClientConfig, type ConnectionConfig } from '../db/pool';
import { DEFAULTS, toConnectTimeout } from '../db/bounds';
import type { ListenConnection } from './watcher';

/** `p`, or a rejection after `ms` milliseconds (then `onTimeout` runs first). */
function within<T>(p: Promise<T>, ms: number, what: string, onTimeout: () => void): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const deadline = new Promise<never>((_, reject) => {
		timer = setTimeout(() => {
			onTimeout();
			reject(new Error(`${what} did not finish within the connection timeout (${ms} ms)`));
		}, ms);
		timer.unref?.();
	});
	return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

/** Opens the LISTEN connection. Rejects when it cannot connect within the connection timeout. */
export async function connectListener(config: ConnectionConfig): Promise<ListenConnection> {
	const waitMs = toConnectTimeout(config.connectTimeoutMs);
	// Explicit settings only (endpoint.ts): no PG* environment variables, no ~/.pgpass.
	const client: PgClient = new IsolatedClient({
		...toClientConfig(config),
		keepAlive: true,
		keepAliveInitialDelayMillis: DEFAULTS.keepAliveIdleMs,
		application_name: 'n8n-nodes-operation-ledger:listen',
	});
	let lostFn: ((e?: Error) => void) | undefined;
	let lostEarly: Error | undefined | null = null;
	const lost = (e?: Error) => {
		if (lostFn) lostFn(e);
		else lostEarly = e;
	};
	client.on('error', (e) => lost(e));
	client.on('end', () => lost());
	// The socket itself, to cut a connection that does not answer (pg has no public handle for it).
	const destroy = () => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
	await within(client.connect(), waitMs + 1000, 'Connecting for LISTEN', destroy);
	return {
		async listen(channel: string) {
			if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`Invalid channel name ${channel}`);
			await within(client.query(`LISTEN ${channel}`), waitMs, 'LISTEN', destroy);
		},
		async probe() {
			try {
				await within(client.query('SELECT 1'), waitMs, 'The LISTEN connection health probe', destroy);
			} catch (e) {
				destroy();
				lost(e as Error);
				throw e;
			}
		},
		onNotification(fn) {
			client.on('notification', (msg) => fn(msg.payload));
		},
		onLost(fn) {
			lostFn = fn;
			if (lostEarly !== null) fn(lostEarly);
		},
		async close() {
			client.removeAllListeners('end');
			client.on('error', () => undefined);
			await within(client.end(), waitMs, 'Closing the LISTEN connection', destroy).catch(() => undefined);
		},
	};
}
