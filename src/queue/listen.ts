/**
 * A dedicated pg Client for LISTEN (never a pooled connection: LISTEN belongs to one session).
 */
import type { Client as PgClient } from 'pg';
import { IsolatedClient } from '../vendor';
import { toClientConfig, type ConnectionConfig } from '../db/pool';
import type { ListenConnection } from './watcher';

export async function connectListener(config: ConnectionConfig): Promise<ListenConnection> {
	// Explicit settings only (endpoint.ts): no PG* environment variables, no ~/.pgpass.
	const client: PgClient = new IsolatedClient({
		...toClientConfig(config),
		keepAlive: true,
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
	await client.connect();
	return {
		async listen(channel: string) {
			if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`Invalid channel name ${channel}`);
			await client.query(`LISTEN ${channel}`);
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
			await client.end();
		},
	};
}
