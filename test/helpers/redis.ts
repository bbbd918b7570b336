/**
 * A Redis for the queue-mode e2e tests: REDIS_HOST/REDIS_PORT (default 127.0.0.1:6379) when it
 * answers PING, else a redis-server of the test's own on a free loopback port (Debian's
 * redis-server, installed with apt-get when missing, as the other helper programs are), so a bare
 * machine runs queue mode too instead of falling back to regular mode.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { nodeRequire } from './n8nHarness';
import { waitFor } from './wait';

export interface TestRedis {
	host: string;
	port: number;
	/** Whose it is: 'running' (REDIS_HOST/PORT answered) or 'own' (started here, stopped by stop()). */
	source: 'running' | 'own';
	stop(): void;
}

/** True when host:port answers PING with +PONG within 2 s (a connect, a write, a read). */
export function redisAnswers(host: string, port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const s = net.connect({ host, port });
		const done = (ok: boolean) => {
			s.destroy();
			resolve(ok);
		};
		s.setTimeout(2000, () => done(false));
		s.on('error', () => done(false));
		s.on('connect', () => s.write('PING\r\n'));
		s.on('data', (d) => done(d.toString().startsWith('+PONG')));
	});
}

/** The running Redis, or one started for the test (up to 20 s to answer; throws if it does not). */
export async function testRedis(log: (m: string) => void): Promise<TestRedis> {
	const host = process.env.REDIS_HOST || '127.0.0.1';
	const port = Number(process.env.REDIS_PORT || 6379);
	if (await redisAnswers(host, port)) return { host, port, source: 'running', stop: () => undefined };
	const { ensureDebianProgram } = nodeRequire('../../scripts/lib/debian-package.cjs') as { ensureDebianProgram(o: { name: string; pkg?: string; log?: (m: string) => void }): string };
	const { freePort } = nodeRequire('../../scripts/lib/embedded-pg.mjs') as { freePort(): Promise<number> };
	const bin = ensureDebianProgram({ name: 'redis-server', log });
	const own = await freePort();
	const child: ChildProcess = spawn(bin, ['--port', String(own), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
	const stop = () => void child.kill('SIGTERM');
	try {
		await waitFor(() => redisAnswers('127.0.0.1', own), { what: `redis-server on 127.0.0.1:${own}`, timeoutMs: 20_000, intervalMs: 200 });
	} catch (e) {
		stop();
		throw e;
	}
	log(`Redis ${host}:${port} did not answer: started redis-server on 127.0.0.1:${own}`);
	return { host: '127.0.0.1', port: own, source: 'own', stop };
}
