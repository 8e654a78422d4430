import type { BackupRow } from './backup.table.ts';

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
  createdAt: string;
  /** When it was made or failed; null while it is being made. */
  completedAt: string | null;
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
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}

export function toBackupRow(backup: Backup): BackupRow {
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
    created_at: backup.createdAt,
    completed_at: backup.completedAt,
  };
}
