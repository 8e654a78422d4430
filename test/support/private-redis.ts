/**
 * A Redis server of a test's own, for tests that stop, hang or restart it: the shared one must
 * never be touched. It listens on 127.0.0.1 at the first free port of 6390-6399 and keeps
 * nothing on disk.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { until } from './wait.ts';

const PORTS = [6390, 6391, 6392, 6393, 6394, 6395, 6396, 6397, 6398, 6399];

/** Whether `redis-server` is installed. */
export const redisServerInstalled = spawnSync('redis-server', ['--version']).status === 0;

export interface PrivateRedis {
  readonly port: number;
  /** `redis://127.0.0.1:PORT` */
  readonly url: string;
  /** Starts the server (again, on the same port, empty); resolves once it answers. */
  start(): Promise<void>;
  /** Kills the server (SIGKILL) and waits until it is gone. */
  stop(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing, as a hung host does. */
  pause(): void;
  /** SIGCONT after `pause`. */
  resume(): void;
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  let port: number | undefined;
  for (const candidate of PORTS) {
    if (await portFree(candidate)) {
      port = candidate;
      break;
    }
  }
  if (port === undefined) throw new Error(`no free port among ${PORTS.join(', ')} for a private Redis`);
  const chosen = port;
  let child: ChildProcess | undefined;
  const redis: PrivateRedis = {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      await until(() => answers(chosen), { timeoutMs: 10_000, what: `redis-server on ${chosen}` });
    },
    async stop() {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGCONT');
      running.kill('SIGKILL');
      await exited;
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
  };
  await redis.start();
  return redis;
}
