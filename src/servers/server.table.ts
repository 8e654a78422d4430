import type { Generated, Selectable } from 'kysely';

export interface ServerTable {
  id: string;
  /** The first 8 hex characters of the UUID. */
  identifier: string;
  owner_id: string;
  name: string;
  description: string;
  /** null when the server is idle; otherwise installing, suspended, restoring_backup, transferring… */
  status: string | null;
  /** Disk limit in MiB; 0 means unlimited. */
  disk_mb: number;
  backup_limit: number;
  created_at: string;
  updated_at: string;
}
export type ServerRow = Selectable<ServerTable>;

export interface SubuserTable {
  id: Generated<number>;
  server_id: string;
  user_id: string;
  /** JSON array of permission names, e.g. ["backup.read","backup.restore"]. */
  permissions: string;
  created_at: string;
  updated_at: string;
}
export type SubuserRow = Selectable<SubuserTable>;

export interface BackupTable {
  id: string;
  server_id: string;
  name: string;
  ignored_files: string;
  disk: string;
  sha256: string | null;
  bytes: number;
  is_successful: number;
  is_locked: number;
  created_at: string;
  completed_at: string | null;
}
export type BackupRow = Selectable<BackupTable>;
