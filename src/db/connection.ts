import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import type * as Mysql from 'mysql2';
import type Pg from 'pg';
import {
  CompiledQuery,
  Kysely,
  MysqlDialect,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  type DatabaseConnection,
  type DialectAdapter,
  type Dialect,
  type Driver,
  type SqliteDatabase,
} from 'kysely';
import { ConfigError, type Config, type DatabaseKind } from '../config.ts';
import { sqliteDriverProblem } from '../shared/node-version.ts';
import { lossTolerantMysqlPool, lossTolerantPostgresPool, withMootRollback } from './connection-loss.ts';
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
  const problem = sqliteDriverProblem(process.version);
  if (problem !== null) throw new ConfigError(problem);
  const Driver = load('better-sqlite3') as typeof SQLite;
  const database = new Driver(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 10000');
  return new ImmediateSqliteDialect({ database: withStatementCache(database) });
}

/**
 * SQLite, with every transaction begun IMMEDIATE: it takes the write lock at its start, waiting
 * for it under busy_timeout. A plain (deferred) transaction reads first and asks for the lock
 * at its first write, and when another process has written in between it fails at once instead
 * of waiting. Migrations run in one such transaction (SQLite's DDL is transactional, though
 * Kysely does not assume it), so processes starting at once on one file migrate it one after
 * the other: the first applies what is missing, the next find nothing to do.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    return driver;
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
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

/** PostgreSQL's type ids (`pg_type.oid`) whose values this pool reads its own way. */
const PG_BOOL = 16;
const PG_INT8 = 20;
const PG_JSON = 114;
const PG_TIMESTAMPTZ = 1184;

/**
 * How the pool reads values whose type PostgreSQL has and the other engines lack, so that the
 * application sees the same values on every engine (see `src/db/column-types.ts`): a `boolean`
 * as the number 1 or 0 (as MariaDB's BOOLEAN reads), `json` as the text written (as mysql2's
 * `jsonStrings`), and `timestamptz` as the ISO-8601 string the application wrote. bigint
 * columns (ids, byte counts) become numbers: they fit in a double for every value Aerie stores.
 * Set on this pool alone, not on the driver's global table.
 */
const PG_TEXT_PARSERS: Record<number, (value: string) => unknown> = {
  [PG_BOOL]: (value) => (value === 't' ? 1 : 0),
  [PG_INT8]: (value) => Number(value),
  [PG_JSON]: (value) => value,
  [PG_TIMESTAMPTZ]: isoTime,
};

/** `YYYY-MM-DD hh:mm:ss[.ffffff]±hh[:mm[:ss]][ BC]`: a timestamptz as PostgreSQL prints it (DateStyle ISO). */
const PG_TIME =
  /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-]\d\d)(?::(\d\d))?(?::(\d\d))?( BC)?$/;

/**
 * A timestamptz as PostgreSQL prints it, in the session's time zone, as the UTC ISO-8601 string
 * with milliseconds that the application writes (`Date.prototype.toISOString`). Finer digits
 * are cut, as a Date would cut them (Aerie's columns hold milliseconds: `timestamptz(3)`).
 * `-infinity` is the empty time (`''`, before every other) that the portable schema spells with
 * an empty string; anything else unparsed (`infinity`) is returned as printed.
 */
export function isoTime(value: string): string {
  const m = PG_TIME.exec(value);
  if (m === null) return value === '-infinity' ? '' : value;
  const [, year = '', month = '', day = '', hour = '', minute = '', second = ''] = m;
  const millis = (m[7] ?? '').padEnd(3, '0').slice(0, 3);
  const [zone = '+00', zoneMinutes, zoneSeconds, bc] = m.slice(8);
  if (zone === '+00' && zoneMinutes === undefined && bc === undefined && year.length === 4) {
    return `${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}Z`;
  }
  const time = new Date(0);
  time.setUTCFullYear(bc === undefined ? Number(year) : 1 - Number(year), Number(month) - 1, Number(day));
  time.setUTCHours(Number(hour), Number(minute), Number(second), Number(millis));
  const offset =
    (Math.abs(Number(zone)) * 3600 + Number(zoneMinutes ?? 0) * 60 + Number(zoneSeconds ?? 0)) * 1000;
  return new Date(time.getTime() - (zone.startsWith('-') ? -offset : offset)).toISOString();
}

function postgresDialect(url: string): Dialect {
  const pg = load('pg') as typeof Pg;
  const getTypeParser = (oid: number, format?: 'text' | 'binary'): unknown =>
    (format ?? 'text') === 'text' && oid in PG_TEXT_PARSERS
      ? PG_TEXT_PARSERS[oid]
      : (pg.types.getTypeParser(oid, format) as unknown);
  const types = { getTypeParser: getTypeParser as typeof pg.types.getTypeParser };
  // A server that does not answer at all (a host gone, packets dropped) fails a connection
  // attempt after 5 s, a 503, instead of holding the request until the kernel's TCP timeout.
  const pool = new pg.Pool({ connectionString: url, max: 10, types, connectionTimeoutMillis: 5000 });
  // A connection the server closes (a restart, a failover, an administrator), idle or in use,
  // is dropped from the pool and replaced on next use, and never ends the process.
  return new LossTolerantPostgresDialect({ pool: lossTolerantPostgresPool(pool, pg.DatabaseError) });
}

class LossTolerantPostgresDialect extends PostgresDialect {
  override createDriver(): Driver {
    return withMootRollback(super.createDriver());
  }
}

class LossTolerantMysqlDialect extends MysqlDialect {
  override createDriver(): Driver {
    return withMootRollback(super.createDriver());
  }
}

function mysqlDialect(url: string): Dialect {
  return new LossTolerantMysqlDialect({
    pool: lossTolerantMysqlPool(
      (load('mysql2') as typeof Mysql).createPool({
        uri: url,
        // Every character (4-byte ones too) both ways, and exact comparisons of values that meet
        // no column; columns have their own binary collation (migration 2026_11_25).
        charset: 'UTF8MB4_BIN',
        // JSON columns read back as the text that was written, as on the other engines.
        jsonStrings: true,
        connectionLimit: 10,
        connectTimeout: 5000,
        supportBigNumbers: true,
        bigNumberStrings: false,
        timezone: 'Z',
      }),
    ),
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
