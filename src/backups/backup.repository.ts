import { countWhere } from '../db/count.ts';
import type { Executor } from '../db/executor.ts';
import { toBackup, toBackupRow, type Backup } from './backup.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class BackupRepository {
  constructor(private readonly db: Executor) {}

  /** A backup of this server, or nothing: a backup of another server is as good as unknown. */
  async findOfServer(
    serverId: string,
    backupId: string,
    db: Executor = this.db,
  ): Promise<Backup | undefined> {
    if (!UUID.test(backupId)) return undefined;
    const row = await db
      .selectFrom('backups')
      .selectAll()
      .where('id', '=', backupId.toLowerCase())
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    return row && toBackup(row);
  }

  async insert(backup: Backup, db: Executor = this.db): Promise<void> {
    await db.insertInto('backups').values(toBackupRow(backup)).execute();
  }

  /** A page of a server's backups, newest first (ties by id, so pages are stable). */
  async page(serverId: string, window: { limit: number; offset: number }): Promise<Backup[]> {
    const rows = await this.db
      .selectFrom('backups')
      .selectAll()
      .where('server_id', '=', serverId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(window.limit)
      .offset(window.offset)
      .execute();
    return rows.map(toBackup);
  }

  countForServer(serverId: string, db: Executor = this.db): Promise<number> {
    return countWhere(db, 'backups', 'server_id', serverId);
  }

  async complete(
    id: string,
    sha256: string,
    bytes: number,
    now: string,
    db: Executor = this.db,
  ): Promise<void> {
    await db
      .updateTable('backups')
      .set({ sha256, bytes, is_successful: 1, completed_at: now })
      .where('id', '=', id)
      .execute();
  }

  async markFailed(id: string, now: string, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('backups')
      .set({ is_successful: 0, completed_at: now })
      .where('id', '=', id)
      .execute();
  }

  async setLocked(id: string, locked: boolean, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('backups')
      .set({ is_locked: locked ? 1 : 0 })
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('backups').where('id', '=', id).execute();
  }
}
