import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { connect, type Db } from '../../src/db/connection.ts';

/**
 * The server databases the suite runs against, each given a fresh database per test file and
 * dropped afterwards. The URLs name a server and an existing database to connect to first.
 */
export const SERVER_DIALECTS = [
  { kind: 'postgres', url: process.env.AERIE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
  { kind: 'mysql', url: process.env.AERIE_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test' },
] as const;

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Creates an empty database on the dialect's server and returns its URL. */
export async function scratchDatabase(dialect: (typeof SERVER_DIALECTS)[number]): Promise<ScratchDatabase> {
  const name = `aerie_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(dialect.url);
  const target = new URL(dialect.url);
  target.pathname = `/${name}`;
  if (dialect.kind === 'postgres') {
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    return {
      url: target.toString(),
      drop: async () => {
        const client = new pg.Client({ connectionString: url.toString() });
        await client.connect();
        await client.query(`drop database if exists ${name} with (force)`);
        await client.end();
      },
    };
  }
  const admin = await createConnection(url.toString());
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    url: target.toString(),
    drop: async () => {
      const connection = await createConnection(url.toString());
      await connection.query(`drop database if exists ${name}`);
      await connection.end();
    },
  };
}

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
