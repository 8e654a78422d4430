import type { Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { timeType, uuidType } from '../column-types.ts';
import { createIndex } from '../create-index.ts';

/**
 * `backup_deletions`: a record of each backup row deleted, written in the transaction that
 * deletes it, kept until `backup reconcile` finds nothing of the backup left in storage (or for
 * 30 days at most). It is what lets reconcile tell an archive left behind by a deletion, which is
 * garbage, from an archive whose row is missing for another reason (a database restored from an
 * older dump), which may be the only copy of a real backup.
 *
 * No foreign key to `servers`: the record must outlive whatever else is deleted with the backup.
 * `deleted_at` is indexed for dropping the oldest records. The time column has the engine's own
 * type (`timeType`): this migration runs after 2026_12_02_000000_postgres_types.
 */
export function backupDeletionsMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('backup_deletions')
        .addColumn('backup_id', uuidType, (c) => c.primaryKey())
        .addColumn('server_id', uuidType, (c) => c.notNull())
        .addColumn('disk', 'varchar(16)', (c) => c.notNull())
        .addColumn('deleted_at', timeType(kind), (c) => c.notNull())
        .execute();
      await createIndex(db, 'backup_deletions_deleted_at_index', 'backup_deletions', ['deleted_at']);
    },
  };
}
