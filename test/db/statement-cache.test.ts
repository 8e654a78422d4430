/**
 * SQLite statements are prepared once and reused: the same SQL gets the same statement, a busy
 * statement (an iteration still reading it) is never handed out twice, and the cache is bounded.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, withStatementCache, type Db } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

describe('SQLite statement cache', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function memory(): SQLite.Database {
    const database = new SQLite(':memory:');
    cleanups.push(() => {
      database.close();
    });
    database.exec('create table t (n integer)');
    database.exec('insert into t values (1), (2), (3)');
    return database;
  }

  it('hands out the same statement for the same SQL', () => {
    const cached = withStatementCache(memory());
    const first = cached.prepare('select n from t where n > ?');
    expect(cached.prepare('select n from t where n > ?')).toBe(first);
    expect(cached.prepare('select n from t where n < ?')).not.toBe(first);
    expect(first.all([1])).toEqual([{ n: 2 }, { n: 3 }]);
  });

  it('gives a fresh statement while the cached one is being iterated', () => {
    const cached = withStatementCache(memory());
    const sql = 'select n from t order by n';
    const reading = cached.prepare(sql).iterate([]);
    expect(reading.next().value).toEqual({ n: 1 });
    const other = cached.prepare(sql);
    expect(other.all([])).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(reading.next().value).toEqual({ n: 2 });
    reading.return?.();
  });

  it('keeps at most 256 statements, dropping the least recently used', () => {
    const cached = withStatementCache(memory());
    const first = cached.prepare('select 0');
    for (let i = 1; i <= 256; i += 1) {
      cached.prepare(`select ${i}`);
      if (i % 50 === 0) expect(cached.prepare('select 0')).toBe(first); // kept while in use
    }
    cached.prepare('select 0');
    for (let i = 257; i <= 600; i += 1) cached.prepare(`select ${i}`);
    expect(cached.prepare('select 0')).not.toBe(first);
  });

  it('a stream left after its first row frees the statement for the next query', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-cache-'));
    const db: Db = connect({ kind: 'sqlite', url: 'sqlite:', sqlitePath: path.join(dir, 'aerie.db') });
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    cleanups.push(() => db.destroy());
    await migrateToLatest(db);
    const query = db.kysely.selectFrom('aerie_migrations' as never).select('name' as never);
    const all = await query.execute();
    expect(all.length).toBeGreaterThan(1);
    for await (const row of query.stream()) {
      expect(row).toEqual(all[0]);
      break;
    }
    expect(await query.execute()).toEqual(all);
  });
});
