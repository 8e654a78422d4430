import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import type * as Mysql from 'mysql2';
import type Pg from 'pg';
import {
  Kysely,
  MysqlDialect,
  PostgresDialect,
  SqliteDialect,
  type Dialect,
  type SqliteDatabase,
} from 'kysely';
import type { Config, DatabaseKind } from '../config.ts';
import type { Database } from './database.ts';

/**
 * The drivers are loaded when a database of theirs is opened, not with this module: a process
 * uses one, and each of the others costs 10-15 MB of memory and time at start-up.
 */
const load = createRequire(import.meta.url);

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly kind: DatabaseKind;
  destroy(): Promise<void>;
}

function sqliteDialect(file: string): Dialect {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const Driver = load('better-sqlite3') as typeof SQLite;
  const database = new Driver(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 10000');
  return new SqliteDialect({ database: withStatementCache(database) });
}

/** How many prepared SQLite statements are kept for reuse, the least recently used dropped first. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * The database as the query builder sees it, with each statement prepared once and reused: the
 * builder asks for a statement on every query, and preparing one costs about as much as running
 * a small query. A statement still being read by an iteration is busy, so that query gets a
 * fresh one instead.
 */
export function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(sql) {
      const cached = statements.get(sql);
      if (cached !== undefined && !cached.busy) {
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      if (cached === undefined) {
        statements.set(sql, statement);
        if (statements.size > STATEMENT_CACHE_SIZE) {
          const oldest = statements.keys().next();
          if (oldest.done !== true) statements.delete(oldest.value);
        }
      }
      return statement;
    },
  };
}

function postgresDialect(url: string): Dialect {
  const pg = load('pg') as typeof Pg;
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
    pool: (load('mysql2') as typeof Mysql).createPool({
      uri: url,
      // Every character (4-byte ones too) both ways, and exact comparisons of values that meet
      // no column; columns have their own binary collation (migration 2026_11_25).
      charset: 'UTF8MB4_BIN',
      // JSON columns read back as the text that was written, as on the other engines.
      jsonStrings: true,
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
