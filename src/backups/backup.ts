import type { BackupProgress } from './backup-progress.ts';
import type { BackupRow } from './backup.table.ts';

export type BackupFormat = 'archive' | 'snapshot';

/** A backup of a server: an archive in backup storage, and what is known about it. */
export interface Backup {
  id: string;
  serverId: string;
  name: string;
  /** The gitignore rules it was made with. */
  ignoredFiles: string[];
  /** Where the archive is kept (`local`). */
  disk: string;
  /** SHA-256 (hex) of the archive, once it is made. */
  sha256: string | null;
  bytes: number;
  isSuccessful: boolean;
  isLocked: boolean;
  /** Made by a schedule: rotated out at the backup limit, and subject to the retention policy. */
  isAutomatic: boolean;
  /** The schedule that made it, when one did. */
  scheduleId: number | null;
  createdAt: string;
  /** When it was made or failed; null while it is being made. */
  completedAt: string | null;
  /** How many files the archive holds, once made (null for backups made before it was counted). */
  files: number | null;
  /**
   * `archive`: a whole .tar.gz (`bytes` is its size). `snapshot`: a snapshot in the server's
   * repository (`bytes` is the size of its files, what a restore writes; `addedBytes` what it
   * added to storage).
   */
  format: BackupFormat;
  /** What a snapshot added to storage (new chunks, compressed); null for an archive or while made. */
  addedBytes: number | null;
  /** The backup or restore running on it now; null when none runs. */
  progress: BackupProgress | null;
}

export function toBackup(row: BackupRow): Backup {
  return {
    id: row.id,
    serverId: row.server_id,
    name: row.name,
    ignoredFiles: JSON.parse(row.ignored_files) as string[],
    disk: row.disk,
    sha256: row.sha256,
    bytes: Number(row.bytes),
    isSuccessful: Number(row.is_successful) === 1,
    isLocked: Number(row.is_locked) === 1,
    isAutomatic: Number(row.is_automatic) === 1,
    scheduleId: row.schedule_id === null ? null : Number(row.schedule_id),
    createdAt: row.created_at,
    completedAt: row.completed_at,
    files: row.files === null ? null : Number(row.files),
    format: row.format,
    addedBytes: row.added_bytes === null ? null : Number(row.added_bytes),
    progress: progressOf(row),
  };
}

function progressOf(row: BackupRow): BackupProgress | null {
  const operation = row.progress_operation;
  if (operation === null || row.progress_started_at === null) return null;
  const count = (value: number | null) => (value === null ? null : Number(value));
  return {
    operation,
    phase: row.progress_phase ?? '',
    bytesDone: Number(row.progress_bytes_done ?? 0),
    bytesTotal: count(row.progress_bytes_total),
    filesDone: Number(row.progress_files_done ?? 0),
    filesTotal: count(row.progress_files_total),
    startedAt: row.progress_started_at,
    updatedAt: row.progress_updated_at ?? row.progress_started_at,
  };
}

/** The row of a new backup (its revision starts at the column's default). */
export function toBackupRow(backup: Backup): Omit<BackupRow, 'revision'> {
  return {
    id: backup.id,
    server_id: backup.serverId,
    name: backup.name,
    ignored_files: JSON.stringify(backup.ignoredFiles),
    disk: backup.disk,
    sha256: backup.sha256,
    bytes: backup.bytes,
    is_successful: backup.isSuccessful ? 1 : 0,
    is_locked: backup.isLocked ? 1 : 0,
    is_automatic: backup.isAutomatic ? 1 : 0,
    schedule_id: backup.scheduleId,
    created_at: backup.createdAt,
    completed_at: backup.completedAt,
    files: backup.files,
    format: backup.format,
    added_bytes: backup.addedBytes,
    ...progressColumns(backup.progress),
  };
}

/** The progress columns of a backup's row for `progress` (all null for none). */
export function progressColumns(progress: BackupProgress | null) {
  return {
    progress_operation: progress?.operation ?? null,
    progress_phase: progress?.phase ?? null,
    progress_bytes_done: progress?.bytesDone ?? null,
    progress_bytes_total: progress?.bytesTotal ?? null,
    progress_files_done: progress?.filesDone ?? null,
    progress_files_total: progress?.filesTotal ?? null,
    progress_started_at: progress?.startedAt ?? null,
    progress_updated_at: progress?.updatedAt ?? null,
  } satisfies Partial<BackupRow>;
}
