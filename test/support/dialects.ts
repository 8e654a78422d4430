import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { connect, type Db } from '../../src/db/connection.ts';
import { SERVER_DIALECTS, scratchDatabase } from './databases.ts';

export {
  SERVER_DIALECTS,
  TEST_DATABASE,
  scratchDatabase,
  testDatabase,
  type ScratchDatabase,
} from './databases.ts';

/**
 * Whether a server answers at `url`'s host and port. Tests that need PostgreSQL, MariaDB or
 * Redis run when it does. When it does not, they fail under CI (which always provides the
 * servers) and are skipped, loudly, on a developer's machine that lacks them.
 */
export async function serverAvailable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  const defaultPort = url.startsWith('postgres') ? 5432 : url.startsWith('mysql') ? 3306 : 6379;
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || defaultPort) });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
  if (!reachable && process.env.CI === 'true') throw new Error(`CI must provide the server at ${url}`);
  if (!reachable)
    process.stderr.write(`\nSKIPPED: no server answers at ${url}; start it to run these tests.\n`);
  return reachable;
}

export const REDIS_URL = process.env.AERIE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Every server dialect, each with whether its server answers (see serverAvailable). */
export const SERVER_DIALECT_CASES = await Promise.all(
  SERVER_DIALECTS.map(async (dialect) => ({ ...dialect, available: await serverAvailable(dialect.url) })),
);

/** SQLite, always, then PostgreSQL and MariaDB with whether their servers answer. */
export const ALL_DIALECT_CASES = [
  { kind: 'sqlite' as const, url: '', available: true },
  ...SERVER_DIALECT_CASES.map((dialect) => ({ ...dialect, kind: dialect.kind })),
];

/**
 * An empty database of `kind`, connected but not migrated: a fresh SQLite file, or a scratch
 * database on the dialect's server. `close()` disconnects and deletes it.
 */
export async function emptyDatabase(
  dialect: (typeof ALL_DIALECT_CASES)[number],
): Promise<{ db: Db; close(): Promise<void> }> {
  if (dialect.kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-db-'));
    const db = connect({ kind: 'sqlite', url: 'sqlite:', sqlitePath: path.join(dir, 'aerie.db') });
    return {
      db,
      close: async () => {
        await db.destroy();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const scratch = await scratchDatabase({
    kind: dialect.kind,
    url: dialect.url,
  });
  const db = connect({ kind: dialect.kind, url: scratch.url, sqlitePath: null });
  return {
    db,
    close: async () => {
      await db.destroy();
      await scratch.drop();
    },
  };
}
