import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';
import type { Db } from './connection.ts';
import { initialMigration } from './migrations/2026_11_22_000000_initial.ts';
import { userNumbersMigration } from './migrations/2026_11_23_000000_user_numbers.ts';
import { feedFilterColumnsMigration } from './migrations/2026_11_24_000000_feed_filter_columns.ts';
import { exactTextMigration } from './migrations/2026_11_25_000000_exact_text.ts';
import { feedCountsMigration } from './migrations/2026_11_28_000000_feed_counts.ts';
import { serverNodesMigration } from './migrations/2026_11_26_000000_server_nodes.ts';
import { retentionIndexesMigration } from './migrations/2026_11_27_000000_retention_indexes.ts';
import { jobProgressMigration } from './migrations/2026_11_30_000000_job_progress.ts';
import { twoFactorMigration } from './migrations/2026_11_29_000000_two_factor.ts';
import { postgresTypesMigration } from './migrations/2026_12_02_000000_postgres_types.ts';
import { totpPendingExpiryMigration } from './migrations/2026_12_03_000000_totp_pending_expiry.ts';
import { jobPriorityMigration } from './migrations/2026_12_04_000000_job_priority.ts';
import { backupDeletionsMigration } from './migrations/2026_12_05_000000_backup_deletions.ts';
import { schedulesMigration } from './migrations/2026_12_06_000000_schedules.ts';
import { automaticBackupsMigration } from './migrations/2026_12_07_000000_automatic_backups.ts';
import { snapshotBackupsMigration } from './migrations/2026_12_08_000000_snapshot_backups.ts';

/** Migrations in order; each name is its timestamp, so the order is the name's. */
export function migrations(db: Db): Record<string, Migration> {
  return {
    '2026_11_22_000000_initial': initialMigration(db.kind),
    '2026_11_23_000000_user_numbers': userNumbersMigration(db.kind),
    '2026_11_24_000000_feed_filter_columns': feedFilterColumnsMigration(db.kind),
    '2026_11_25_000000_exact_text': exactTextMigration(db.kind),
    '2026_11_26_000000_server_nodes': serverNodesMigration(db.kind),
    '2026_11_27_000000_retention_indexes': retentionIndexesMigration(),
    '2026_11_28_000000_feed_counts': feedCountsMigration(db.kind),
    '2026_11_29_000000_two_factor': twoFactorMigration(db.kind),
    '2026_11_30_000000_job_progress': jobProgressMigration(db.kind),
    '2026_12_02_000000_postgres_types': postgresTypesMigration(db.kind),
    '2026_12_03_000000_totp_pending_expiry': totpPendingExpiryMigration(db.kind),
    '2026_12_04_000000_job_priority': jobPriorityMigration(db.kind),
    '2026_12_05_000000_backup_deletions': backupDeletionsMigration(db.kind),
    '2026_12_06_000000_schedules': schedulesMigration(db.kind),
    '2026_12_07_000000_automatic_backups': automaticBackupsMigration(db.kind),
    '2026_12_08_000000_snapshot_backups': snapshotBackupsMigration(db.kind),
  };
}

/** The names of every migration this build knows, in order (readiness checks they have all run). */
export function knownMigrations(db: Db): string[] {
  return Object.keys(migrations(db)).sort();
}

/** A migrator over the given migrations, with Aerie's table names and ordering rule. */
export function migratorFor(db: Db, chosen: Record<string, Migration>): Migrator {
  const provider: MigrationProvider = { getMigrations: () => Promise.resolve(chosen) };
  return new Migrator({
    db: db.kysely,
    provider,
    migrationTableName: 'aerie_migrations',
    migrationLockTableName: 'aerie_migrations_lock',
    // A database migrated by a build that lacked a migration older than its newest one (work
    // that landed out of date order) gets the missing one too, instead of being refused.
    allowUnorderedMigrations: true,
    // Names are compared as strings (all are `YYYY_MM_DD_HHMMSS_name`), not with Kysely's default
    // localeCompare, whose first call loads ICU's collation data: 17 ms of every command's start.
    nameComparator: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
  });
}

export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const result = await migratorFor(db, migrations(db)).migrateToLatest();
  if (result.error !== undefined) {
    const reason = result.error instanceof Error ? result.error.message : JSON.stringify(result.error);
    throw new Error(`database migration failed: ${reason}`, { cause: result.error });
  }
  return result;
}
