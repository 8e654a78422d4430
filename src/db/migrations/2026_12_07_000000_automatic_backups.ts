import type { Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { flagDefault, flagType, timeType, uuidType } from '../column-types.ts';

/**
 * Automatic backups and their retention.
 *
 * - `backups.is_automatic`: 1 for a backup a schedule made (rotated out at the server's backup
 *   limit, and subject to the retention policy), 0 for one made by hand (never removed but by a
 *   user). Every existing backup was made by hand.
 * - `backups.schedule_id`: the schedule that made it, when one did. No foreign key: the backup
 *   outlives its schedule.
 * - `backup_retention`: a server's retention policy, one row per server (none: no policy). Each
 *   `keep_*` column is a count, or null for a rule that is off (restic `forget`'s rules).
 *
 * Flag and time columns take the engine's own types (`flagType`, `timeType`): this migration runs
 * after 2026_12_02_000000_postgres_types.
 */
export function automaticBackupsMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // One column per statement: SQLite adds only one at a time.
      await db.schema
        .alterTable('backups')
        .addColumn('is_automatic', flagType(kind), (c) => c.notNull().defaultTo(flagDefault(kind, false)))
        .execute();
      await db.schema.alterTable('backups').addColumn('schedule_id', 'integer').execute();
      await db.schema
        .createTable('backup_retention')
        .addColumn('server_id', uuidType, (c) => c.primaryKey().references('servers.id').onDelete('cascade'))
        .addColumn('keep_last', 'integer')
        .addColumn('keep_hourly', 'integer')
        .addColumn('keep_daily', 'integer')
        .addColumn('keep_weekly', 'integer')
        .addColumn('keep_monthly', 'integer')
        .addColumn('keep_yearly', 'integer')
        .addColumn('updated_at', timeType(kind), (c) => c.notNull())
        .execute();
    },
  };
}
