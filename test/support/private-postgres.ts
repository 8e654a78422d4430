/**
 * A PostgreSQL cluster of a test's own, for tests that restart or stop the server: the shared
 * one must never be touched. It is created with initdb in a temporary directory, listens on
 * 127.0.0.1 at the first free port of 55432-55439, trusts every local connection, and is
 * removed by `destroy()`. PostgreSQL refuses to run as root, so as root its programs run as the
 * `postgres` user, which owns the directory.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const PORTS = [55432, 55433, 55434, 55435, 55436, 55437, 55438, 55439];

/** The directory holding initdb and pg_ctl, or undefined when PostgreSQL's server is not installed. */
export function postgresBinDir(): string | undefined {
  const versions = fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql') : [];
  const candidates = [
    ...versions.sort((a, b) => Number(b) - Number(a)).map((v) => `/usr/lib/postgresql/${v}/bin`),
    ...(process.env.PATH ?? '').split(path.delimiter),
  ];
  return candidates.find((dir) => dir !== '' && fs.existsSync(path.join(dir, 'initdb')));
}

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  /** `pg_ctl restart -m fast`: every session is ended at once, as an operator's restart does. */
  restart(): Promise<void>;
  /** Stops the server and deletes its directory. Safe to call twice. */
  destroy(): Promise<void>;
  /** The server's log, for a failing test's message. */
  log(): string;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error('PostgreSQL server programs (initdb, pg_ctl) are not installed');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    fs.chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');
  const tool = (name: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', path.join(bin, name), ...args], { timeout: 60_000 })
      : run(path.join(bin, name), args, { timeout: 60_000 });

  let port: number | undefined;
  for (const candidate of PORTS) {
    if (await portFree(candidate)) {
      port = candidate;
      break;
    }
  }
  if (port === undefined) throw new Error(`no free port among ${PORTS.join(', ')} for a private PostgreSQL`);

  await tool('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  // Durability is of no use to a throw-away cluster, and costs time on a shared machine.
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const ctl = (args: string[]) => tool('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '30', ...args]);
  await ctl(['-o', options, 'start']);

  let destroyed = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => {
      await ctl(['-m', 'fast', 'restart']);
    },
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await ctl(['-m', 'immediate', 'stop']).catch(() => undefined);
      fs.rmSync(root, { recursive: true, force: true });
    },
    log: () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-4000) : ''),
  };
}
