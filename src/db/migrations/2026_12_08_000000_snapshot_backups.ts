import type { Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { flagType, timeType, uuidType } from '../column-types.ts';

/**
 * Deduplicated snapshot backups.
 *
 * - `backups.format`: `archive` (a whole `.tar.gz`, every backup made before this) or `snapshot`
 *   (a snapshot in the server's repository).
 * - `backups.added_bytes`: what the backup added to storage (new chunks, compressed); null for
 *   an archive (all of it is its own: `bytes`) and while a snapshot is being made.
 * - `backup_repository_locks`: who works on a server's repository now. Backups hold a shared
 *   lock, a prune an exclusive one; each lock is a lease that its holder renews, so that one
 *   left by a killed process lapses.
 */
export function snapshotBackupsMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // One column per statement: SQLite adds only one at a time.
      await db.schema
        .alterTable('backups')
        .addColumn('format', 'varchar(16)', (c) => c.notNull().defaultTo('archive'))
        .execute();
      await db.schema.alterTable('backups').addColumn('added_bytes', 'bigint').execute();
      await db.schema
        .createTable('backup_repository_locks')
        .addColumn('id', uuidType, (c) => c.primaryKey())
        .addColumn('repository', 'varchar(64)', (c) => c.notNull())
        .addColumn('exclusive', flagType(kind), (c) => c.notNull())
        .addColumn('holder', 'varchar(255)', (c) => c.notNull())
        .addColumn('expires_at', timeType(kind), (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('backup_repository_locks_repository')
        .on('backup_repository_locks')
        .column('repository')
        .execute();
    },
  };
}
