import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { createPool as createMysqlPool } from 'mysql2';
import pg from 'pg';
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, type Dialect } from 'kysely';
import type { Config, DatabaseKind } from '../config.ts';
import type { Database } from './database.ts';

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly kind: DatabaseKind;
  destroy(): Promise<void>;
}

function sqliteDialect(file: string): Dialect {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 10000');
  return new SqliteDialect({ database });
}

function postgresDialect(url: string): Dialect {
  // bigint columns (ids, byte counts) fit in a double for every value Aerie stores.
  const getTypeParser = (oid: number, format?: 'text' | 'binary'): unknown =>
    oid === 20 ? (value: string) => Number(value) : (pg.types.getTypeParser(oid, format) as unknown);
  const types = { getTypeParser: getTypeParser as typeof pg.types.getTypeParser };
  const pool = new pg.Pool({ connectionString: url, max: 10, types });
  // An idle connection the server closes (a restart, a failover, an administrator) is dropped
  // from the pool and replaced on next use. Without a listener, pg's 'error' event would be an
  // uncaught exception and end the process.
  pool.on('error', () => undefined);
  return new PostgresDialect({ pool });
}

function mysqlDialect(url: string): Dialect {
  return new MysqlDialect({
    pool: createMysqlPool({
      uri: url,
      connectionLimit: 10,
      supportBigNumbers: true,
      bigNumberStrings: false,
      timezone: 'Z',
    }),
  });
}

export function connect(database: Config['database']): Db {
  const dialect =
    database.kind === 'sqlite'
      ? sqliteDialect(database.sqlitePath ?? ':memory:')
      : database.kind === 'postgres'
        ? postgresDialect(database.url)
        : mysqlDialect(database.url);
  const kysely = new Kysely<Database>({ dialect });
  return {
    kysely,
    kind: database.kind,
    destroy: () => kysely.destroy(),
  };
}
