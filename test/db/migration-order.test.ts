/**
 * A database migrated by a build that lacked an older migration than its newest (migrations that
 * landed out of date order) is brought up to date, not refused.
 */
import { Migrator } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate.ts';
import { feedCountsMigration } from '../../src/db/migrations/2026_11_28_000000_feed_counts.ts';
import { feedFilterColumnsMigration } from '../../src/db/migrations/2026_11_24_000000_feed_filter_columns.ts';
import { initialMigration } from '../../src/db/migrations/2026_11_22_000000_initial.ts';
import { userNumbersMigration } from '../../src/db/migrations/2026_11_23_000000_user_numbers.ts';
import { emptyDatabase } from '../support/dialects.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

it('runs a missing older migration after newer ones', async () => {
  const database = await emptyDatabase({ kind: 'sqlite', url: '', available: true });
  closers.push(() => database.close());
  const { db } = database;
  const gapped = new Migrator({
    db: db.kysely,
    provider: {
      getMigrations: () =>
        Promise.resolve({
          '2026_11_22_000000_initial': initialMigration('sqlite'),
          '2026_11_23_000000_user_numbers': userNumbersMigration('sqlite'),
          '2026_11_24_000000_feed_filter_columns': feedFilterColumnsMigration('sqlite'),
          '2026_11_28_000000_feed_counts': feedCountsMigration('sqlite'),
        }),
    },
    migrationTableName: 'aerie_migrations',
    migrationLockTableName: 'aerie_migrations_lock',
  });
  expect((await gapped.migrateToLatest()).error).toBeUndefined();

  const result = await migrateToLatest(db);
  const alreadyRun = [
    '2026_11_22_000000_initial',
    '2026_11_23_000000_user_numbers',
    '2026_11_24_000000_feed_filter_columns',
    '2026_11_28_000000_feed_counts',
  ];
  const missing = knownMigrations(db).filter((name) => !alreadyRun.includes(name));
  expect(missing).toContain('2026_11_25_000000_exact_text');
  expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(
    missing.map((name) => [name, 'Success']),
  );
  const servers = await db.kysely.introspection.getTables();
  expect(servers.find((t) => t.name === 'servers')?.columns.map((c) => c.name)).toContain('node');
});
