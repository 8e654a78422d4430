import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Executor } from '../db/executor.ts';

/** A backup whose row was deleted: anything stored for it is garbage. */
export interface BackupDeletion {
  backupId: string;
  serverId: string;
  disk: string;
  deletedAt: string;
}

/** Deletes of many records go in chunks, well below every engine's limit on bound values. */
const CHUNK = 500;

/**
 * The records of deleted backups (`backup_deletions`). Written in the transaction that deletes a
 * backup's row; read and cleared by `backup reconcile`. Few at any time: a record lives until
 * reconcile finds nothing of its backup left, usually within two runs.
 */
export class BackupDeletionRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Records a deletion; pass the transaction that deletes the row. */
  async record(deletion: BackupDeletion, db: Executor = this.db): Promise<void> {
    await db
      .insertInto('backup_deletions')
      .values({
        backup_id: deletion.backupId,
        server_id: deletion.serverId,
        disk: deletion.disk,
        deleted_at: deletion.deletedAt,
      })
      .execute();
  }

  async all(): Promise<BackupDeletion[]> {
    const rows = await this.db.selectFrom('backup_deletions').selectAll().orderBy('backup_id').execute();
    return rows.map((row) => ({
      backupId: row.backup_id,
      serverId: row.server_id,
      disk: row.disk,
      deletedAt: row.deleted_at,
    }));
  }

  /** Drops the records of these backups; returns how many there were. */
  async forget(backupIds: readonly string[]): Promise<number> {
    let forgotten = 0;
    for (let i = 0; i < backupIds.length; i += CHUNK) {
      const result = await this.db
        .deleteFrom('backup_deletions')
        .where('backup_id', 'in', backupIds.slice(i, i + CHUNK))
        .executeTakeFirst();
      forgotten += Number(result.numDeletedRows);
    }
    return forgotten;
  }

  /** Drops the records written before `before`; returns how many. */
  async forgetBefore(before: string): Promise<number> {
    const result = await this.db
      .deleteFrom('backup_deletions')
      .where('deleted_at', '<', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
