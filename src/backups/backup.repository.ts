import type { ExpressionBuilder } from 'kysely';
import type { Database } from '../db/database.ts';
import { countWhere } from '../db/count.ts';
import { afterCommit, type Executor } from '../db/executor.ts';
import { deletedOne, updatedOne } from '../db/row-count.ts';
import type { BackupProgress } from './backup-progress.ts';
import { progressColumns, toBackup, toBackupRow, type Backup } from './backup.ts';
import type { ServerChanges } from '../servers/server-changes.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A backup as its writes name it: the server is told of the change. */
export type BackupRef = Pick<Backup, 'id' | 'serverId'>;

/** A backup as reconciling storage sees it. */
export interface BackupState {
  id: string;
  serverId: string;
  name: string;
  disk: string;
  isSuccessful: boolean;
  /** Null while the backup is being made. */
  completedAt: string | null;
  /** When its making last wrote progress, or else when it was created. */
  lastSignOfLife: string;
}

/**
 * Every write bumps the row's `revision` and, once committed, tells `changes` (the event streams
 * of this process) which server it was on.
 */
/** What marking a backup failed writes: the outcome, no progress, and a new revision. */
function failedColumns(now: string) {
  return (eb: ExpressionBuilder<Database, 'backups'>) => ({
    is_successful: 0,
    completed_at: now,
    ...progressColumns(null),
    revision: eb('revision', '+', 1),
  });
}

export class BackupRepository {
  constructor(
    private readonly db: Executor,
    private readonly changes?: ServerChanges,
  ) {}

  /** A backup of this server, or nothing: a backup of another server is as good as unknown. */
  /**
   * The server's newest successful snapshot backup in `disk`'s repository, other than `except`:
   * the parent a new snapshot is made against.
   */
  async lastSnapshot(serverId: string, disk: string, except: string): Promise<Backup | undefined> {
    const row = await this.db
      .selectFrom('backups')
      .selectAll()
      .where('server_id', '=', serverId)
      .where('disk', '=', disk)
      .where('format', '=', 'snapshot')
      .where('is_successful', '=', 1)
      .where('id', '!=', except)
      .orderBy('completed_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && toBackup(row);
  }

  /** The server's successful backup named `name`, if there is one. */
  async findSuccessfulByName(serverId: string, name: string): Promise<Backup | undefined> {
    const row = await this.db
      .selectFrom('backups')
      .selectAll()
      .where('server_id', '=', serverId)
      .where('name', '=', name)
      .where('is_successful', '=', 1)
      .executeTakeFirst();
    return row && toBackup(row);
  }

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
    this.changed(backup, db);
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

  /**
   * The backup a schedule's backup makes room by deleting at the backup limit: the oldest
   * successful backup that is not locked (by hand or by a schedule, as Pterodactyl chooses).
   */
  async oldestRotatable(serverId: string, db: Executor = this.db): Promise<Backup | undefined> {
    const row = await db
      .selectFrom('backups')
      .selectAll()
      .where('server_id', '=', serverId)
      .where('is_successful', '=', 1)
      .where('is_locked', '=', 0)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .limit(1)
      .executeTakeFirst();
    return row && toBackup(row);
  }

  /** Every backup of a server, newest first (what a retention policy is applied to). */
  async allOfServer(serverId: string, db: Executor = this.db): Promise<Backup[]> {
    const rows = await db
      .selectFrom('backups')
      .selectAll()
      .where('server_id', '=', serverId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map(toBackup);
  }

  /** The storage a server's backups take: each archive's size, plus what each snapshot added. */
  async storageOfServer(serverId: string): Promise<number> {
    const rows = await this.db
      .selectFrom('backups')
      .select(['format', 'bytes', 'added_bytes'])
      .where('server_id', '=', serverId)
      .execute();
    return rows.reduce(
      (sum, row) => sum + Number(row.format === 'snapshot' ? (row.added_bytes ?? 0) : row.bytes),
      0,
    );
  }

  countForServer(serverId: string, db: Executor = this.db): Promise<number> {
    return countWhere(db, 'backups', 'server_id', serverId);
  }

  /** Records the archive made, and that nothing runs on the backup any more. */
  async complete(
    backup: BackupRef,
    archive: { sha256: string; bytes: number; files: number; addedBytes?: number },
    now: string,
    db: Executor = this.db,
  ): Promise<void> {
    await db
      .updateTable('backups')
      .set((eb) => ({
        sha256: archive.sha256,
        bytes: archive.bytes,
        files: archive.files,
        ...(archive.addedBytes === undefined ? {} : { added_bytes: archive.addedBytes }),
        is_successful: 1,
        completed_at: now,
        ...progressColumns(null),
        revision: eb('revision', '+', 1),
      }))
      .where('id', '=', backup.id)
      .execute();
    this.changed(backup, db);
  }

  async markFailed(backup: BackupRef, now: string, db: Executor = this.db): Promise<void> {
    await db.updateTable('backups').set(failedColumns(now)).where('id', '=', backup.id).execute();
    this.changed(backup, db);
  }

  async setLocked(backup: BackupRef, locked: boolean, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('backups')
      .set((eb) => ({ is_locked: locked ? 1 : 0, revision: eb('revision', '+', 1) }))
      .where('id', '=', backup.id)
      .execute();
    this.changed(backup, db);
  }

  async delete(backup: BackupRef, db: Executor = this.db): Promise<void> {
    await db.deleteFrom('backups').where('id', '=', backup.id).execute();
    this.changed(backup, db);
  }

  /**
   * Deletes a backup only while it may be deleted: finished and unlocked. Says whether it did: a
   * request that lost a race (the row gone, locked or not finished meanwhile) deletes nothing.
   */
  async deleteIfDeletable(backup: BackupRef, db: Executor = this.db): Promise<boolean> {
    const deleted = await deletedOne(
      db
        .deleteFrom('backups')
        .where('id', '=', backup.id)
        .where('is_locked', '=', 0)
        .where('completed_at', 'is not', null),
    );
    if (deleted) this.changed(backup, db);
    return deleted;
  }

  /**
   * Marks failed a backup still shown in progress whose making last showed a sign of life
   * (progress, or its creation) before `before`. Says whether it did: one that moved on since it
   * was read, or that another process marked first, is left as it is.
   */
  async markStalled(
    backup: BackupRef,
    before: string,
    now: string,
    db: Executor = this.db,
  ): Promise<boolean> {
    const marked = await updatedOne(
      db
        .updateTable('backups')
        .set(failedColumns(now))
        .where('id', '=', backup.id)
        .where('completed_at', 'is', null)
        .where((eb) =>
          eb.or([
            eb('progress_updated_at', '<', before),
            eb.and([eb('progress_updated_at', 'is', null), eb('created_at', '<', before)]),
          ]),
        ),
    );
    if (marked) this.changed(backup, db);
    return marked;
  }

  /** What reconciling storage needs of every backup, `limit` at a time in id order after `afterId`. */
  async statesAfter(afterId: string, limit: number): Promise<BackupState[]> {
    const rows = await this.db
      .selectFrom('backups')
      .select([
        'id',
        'server_id',
        'name',
        'disk',
        'is_successful',
        'completed_at',
        'created_at',
        'progress_updated_at',
      ])
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      serverId: row.server_id,
      name: row.name,
      disk: row.disk,
      isSuccessful: Number(row.is_successful) === 1,
      completedAt: row.completed_at,
      lastSignOfLife: row.progress_updated_at ?? row.created_at,
    }));
  }

  /**
   * Writes the progress of the operation running on the backup. With `startedAt`, only while the
   * row still shows that operation (started then): a write that comes after the operation was
   * cleared, or after another attempt started over, changes nothing. Says whether it wrote.
   */
  async writeProgress(
    backup: BackupRef,
    progress: BackupProgress,
    startedAt: string | null,
    db: Executor = this.db,
  ): Promise<boolean> {
    const result = await db
      .updateTable('backups')
      .set((eb) => ({ ...progressColumns(progress), revision: eb('revision', '+', 1) }))
      .where('id', '=', backup.id)
      .$if(startedAt !== null, (q) => q.where('progress_started_at', '=', startedAt))
      .executeTakeFirst();
    const written = Number(result.numUpdatedRows) > 0;
    if (written) this.changed(backup, db);
    return written;
  }

  /**
   * Shows that nothing runs on the backup any more; with `startedAt`, only if the operation
   * started then is the one it shows.
   */
  async clearProgress(backup: BackupRef, startedAt: string | null, db: Executor = this.db): Promise<void> {
    const result = await db
      .updateTable('backups')
      .set((eb) => ({ ...progressColumns(null), revision: eb('revision', '+', 1) }))
      .where('id', '=', backup.id)
      .where('progress_started_at', 'is not', null)
      .$if(startedAt !== null, (q) => q.where('progress_started_at', '=', startedAt))
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) this.changed(backup, db);
  }

  private changed(backup: BackupRef, db: Executor): void {
    const changes = this.changes;
    if (changes !== undefined) afterCommit(db, () => changes.notify(backup.serverId));
  }
}
