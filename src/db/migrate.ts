import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';
import type { Db } from './connection.ts';
import { initialMigration } from './migrations/2026_11_22_000000_initial.ts';
import { userNumbersMigration } from './migrations/2026_11_23_000000_user_numbers.ts';
import { feedFilterColumnsMigration } from './migrations/2026_11_24_000000_feed_filter_columns.ts';

/** Migrations in order; each name is its timestamp, so the order is the name's. */
function migrations(db: Db): Record<string, Migration> {
  return {
    '2026_11_22_000000_initial': initialMigration(db.kind),
    '2026_11_23_000000_user_numbers': userNumbersMigration(db.kind),
    '2026_11_24_000000_feed_filter_columns': feedFilterColumnsMigration(db.kind),
  };
}

export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const provider: MigrationProvider = { getMigrations: () => Promise.resolve(migrations(db)) };
  const migrator = new Migrator({
    db: db.kysely,
    provider,
    migrationTableName: 'aerie_migrations',
    migrationLockTableName: 'aerie_migrations_lock',
  });
  const result = await migrator.migrateToLatest();
  if (result.error !== undefined) {
    const reason = result.error instanceof Error ? result.error.message : JSON.stringify(result.error);
    throw new Error(`database migration failed: ${reason}`, { cause: result.error });
  }
  return result;
}
