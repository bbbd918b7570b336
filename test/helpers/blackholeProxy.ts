/**
 * A loopback TCP proxy in front of a Postgres server that can stop forwarding while keeping every
 * socket open: what a network partition or a dead NAT entry looks like to a client (no reset, no
 * end, no answer). Loopback only (127.0.0.1).
 *
 * - blackhole(): from now on nothing is forwarded in either direction on the connections open now
 *   (their bytes are dropped; the sockets stay open on both sides, also after heal(), as with a
 *   dead NAT entry), and a connection opened during the blackhole is accepted but never reaches
 *   the server.
 * - heal(): new connections are forwarded again.
 * - dropReplyAfter(pattern): the next client-to-server chunk that contains `pattern` (e.g. the
 *   simple-protocol Query carrying COMMIT) is forwarded; from then on that connection's answers
 *   are dropped. The server does the work; the client never hears of it.
 */
import net from 'node:net';

interface Link {
	client: net.Socket;
	server: net.Socket | undefined;
	/** Nothing is forwarded any more, either way. */
	dead: boolean;
	/** The server's answers are dropped. */
	repliesDropped: boolean;
}

export interface BlackholeProxy {
	port: number;
	/** `url` (a postgres:// URL) with its host and port replaced by the proxy's. */
	through(url: string): string;
	blackhole(): void;
	heal(): void;
	/** Resolves when a chunk containing `pattern` was forwarded and the replies after it are being dropped. */
	dropReplyAfter(pattern: string): Promise<void>;
	/** Connections accepted so far. */
	readonly accepted: number;
	close(): Promise<void>;
}

export async function startBlackholeProxy(targetHost: string, targetPort: number): Promise<BlackholeProxy> {
	const links = new Set<Link>();
	let partitioned = false;
	let accepted = 0;
	let armed: { pattern: string; done: () => void } | undefined;
	const server = net.createServer((client) => {
		accepted++;
		const link: Link = { client, server: undefined, dead: partitioned, repliesDropped: false };
		links.add(link);
		client.on('error', () => undefined);
		client.on('close', () => {
			// A partition also swallows the FIN: the server side of a dead link stays open.
			if (!link.dead) link.server?.destroy();
			if (link.dead && !link.server) links.delete(link);
		});
		if (link.dead) {
			client.on('data', () => undefined);
			return;
		}
		const upstream = net.connect({ host: targetHost, port: targetPort });
		link.server = upstream;
		upstream.on('error', () => undefined);
		upstream.on('close', () => {
			if (!link.dead) client.destroy();
		});
		upstream.on('data', (chunk) => {
			if (!link.dead && !link.repliesDropped) client.write(chunk);
		});
		client.on('data', (chunk) => {
			if (link.dead) return;
			upstream.write(chunk);
			if (armed && chunk.includes(armed.pattern)) {
				link.repliesDropped = true;
				const done = armed.done;
				armed = undefined;
				done();
			}
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const port = (server.address() as net.AddressInfo).port;
	return {
		port,
		through(url: string) {
			const u = new URL(url);
			u.hostname = '127.0.0.1';
			u.port = String(port);
			return u.toString();
		},
		blackhole() {
			partitioned = true;
			for (const l of links) l.dead = true;
		},
		heal() {
			partitioned = false;
		},
		dropReplyAfter(pattern: string) {
			return new Promise<void>((resolve) => {
				armed = { pattern, done: resolve };
			});
		},
		get accepted() {
			return accepted;
		},
		async close() {
			for (const l of links) {
				l.client.destroy();
				l.server?.destroy();
			}
			links.clear();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}
