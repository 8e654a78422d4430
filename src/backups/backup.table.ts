import type { Generated, Selectable } from 'kysely';

export interface BackupTable {
  id: string;
  server_id: string;
  name: string;
  ignored_files: string;
  disk: string;
  sha256: string | null;
  bytes: number;
  /** 1 or 0 (every engine stores flags as integers); read as a boolean by the repository. */
  is_successful: number;
  is_locked: number;
  /** 1 for a backup a schedule made (rotated at the limit, subject to retention), 0 by hand. */
  is_automatic: Generated<number>;
  /** The schedule that made it, when one did (no foreign key: it outlives the schedule). */
  schedule_id: number | null;
  created_at: string;
  completed_at: string | null;
  /** Goes up by one with every change to the row (event streams read it to find what changed). */
  revision: Generated<number>;
  /** How many files the finished archive holds; null while it is made, and for older backups. */
  files: number | null;
  /** `archive` (a whole .tar.gz) or `snapshot` (in the server's repository). */
  format: Generated<'archive' | 'snapshot'>;
  /** What a snapshot added to storage (new chunks, compressed); null for an archive and while made. */
  added_bytes: number | null;
  /** The backup or restore running on this backup; every progress column is null when none runs. */
  progress_operation: 'backup' | 'restore' | null;
  progress_phase: string | null;
  progress_bytes_done: number | null;
  progress_bytes_total: number | null;
  progress_files_done: number | null;
  progress_files_total: number | null;
  progress_started_at: string | null;
  progress_updated_at: string | null;
}
export type BackupRow = Selectable<BackupTable>;

/**
 * A backup row deleted, recorded in the same transaction: what it left in storage is garbage
 * (`backup reconcile` removes it, then the record). Kept 30 days at most.
 */
export interface BackupDeletionTable {
  backup_id: string;
  server_id: string;
  disk: string;
  deleted_at: string;
}
export type BackupDeletionRow = Selectable<BackupDeletionTable>;

/**
 * A server's retention policy for its automatic backups (restic `forget`'s rules): each `keep_*`
 * is a count, or null for a rule that is off. No row: no policy.
 */
export interface BackupRetentionTable {
  server_id: string;
  keep_last: number | null;
  keep_hourly: number | null;
  keep_daily: number | null;
  keep_weekly: number | null;
  keep_monthly: number | null;
  keep_yearly: number | null;
  updated_at: string;
}
export type BackupRetentionRow = Selectable<BackupRetentionTable>;

/** A lease on a server's snapshot repository: shared (a backup) or exclusive (a prune). */
export interface BackupRepositoryLockTable {
  id: string;
  /** `<disk>:<server uuid>`: the repository. */
  repository: string;
  exclusive: number;
  /** Who holds it (host and process), for messages. */
  holder: string;
  /** When it lapses unless renewed. */
  expires_at: string;
}
export type BackupRepositoryLockRow = Selectable<BackupRepositoryLockTable>;
