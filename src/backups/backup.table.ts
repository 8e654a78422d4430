import type { Selectable } from 'kysely';

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
  created_at: string;
  completed_at: string | null;
}
export type BackupRow = Selectable<BackupTable>;
