import type { Generated, Selectable } from 'kysely';

/** What a server may be busy with; `null` (idle) otherwise. Nothing touches its files meanwhile. */
export const SERVER_STATUSES = [
  'installing',
  'install_failed',
  'suspended',
  'restoring_backup',
  'transferring',
] as const;
export type ServerStatus = (typeof SERVER_STATUSES)[number];

export interface ServerTable {
  id: string;
  /** The first 8 hex characters of the UUID. */
  identifier: string;
  owner_id: string;
  name: string;
  description: string;
  /** null when the server is idle. */
  status: ServerStatus | null;
  /** Disk limit in MiB; 0 means unlimited. */
  disk_mb: number;
  backup_limit: number;
  /** The machine whose worker holds the volume and runs the server's jobs (`local` by default). */
  node: string;
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
