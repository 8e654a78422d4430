/**
 * The databases tests run on. Kept apart from `dialects.ts`, which asks the servers whether they
 * answer when it is imported, so that importing the harness costs no connection.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';

/**
 * The server databases the suite runs against, each given a fresh database per test file and
 * dropped afterwards. The URLs name a server and an existing database to connect to first.
 */
export const SERVER_DIALECTS = [
  { kind: 'postgres', url: process.env.AERIE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
  { kind: 'mysql', url: process.env.AERIE_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test' },
] as const;

/**
 * The database the whole suite runs on. Unset, every test app gets a fresh SQLite file; set to
 * `postgres://…` or `mysql://…` (a server and an existing database to connect to first), every
 * test app gets a fresh scratch database on that server instead, dropped when the app closes.
 */
export const TEST_DATABASE = suiteDatabase(process.env.AERIE_TEST_DATABASE_URL);

function suiteDatabase(raw: string | undefined): { kind: 'sqlite' | ServerKind; url: string } {
  if (raw === undefined || raw === '' || raw.startsWith('sqlite')) return { kind: 'sqlite', url: '' };
  if (/^postgres(ql)?:\/\//.test(raw)) return { kind: 'postgres', url: raw };
  if (/^(mysql|mariadb):\/\//.test(raw)) return { kind: 'mysql', url: raw.replace(/^mariadb:/, 'mysql:') };
  throw new Error(`AERIE_TEST_DATABASE_URL must start with postgres:// or mysql://, got "${raw}"`);
}

type ServerKind = (typeof SERVER_DIALECTS)[number]['kind'];

/**
 * A fresh database for one test app or process: a scratch database on the suite's server (see
 * TEST_DATABASE), or else a new SQLite file in `dataDir`. `drop()` deletes a scratch database;
 * the SQLite file goes with its directory.
 */
export async function testDatabase(dataDir: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (TEST_DATABASE.kind === 'sqlite') {
    return { url: `sqlite:${path.join(dataDir, 'aerie.db')}`, drop: () => Promise.resolve() };
  }
  return scratchDatabase({ kind: TEST_DATABASE.kind, url: TEST_DATABASE.url });
}

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Creates an empty database on the dialect's server and returns its URL. */
export async function scratchDatabase(dialect: { kind: ServerKind; url: string }): Promise<ScratchDatabase> {
  const name = `aerie_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(dialect.url);
  const target = new URL(dialect.url);
  target.pathname = `/${name}`;
  if (dialect.kind === 'postgres') {
    const admin = new pg.Client({ connectionString: url.toString() });
    // A connection the server ends makes the next awaited call fail; unheard, its 'error' event
    // would end the test process first.
    admin.on('error', () => undefined);
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    return {
      url: target.toString(),
      drop: async () => {
        const client = new pg.Client({ connectionString: url.toString() });
        client.on('error', () => undefined);
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
