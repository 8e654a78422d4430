import type { BackupRow } from '../servers/server.table.ts';
import { toWireTime } from '../shared/time.ts';
import type { BackupResource } from './backup.schema.ts';

export function toBackupResource(row: BackupRow): BackupResource {
  return {
    object: 'backup',
    attributes: {
      uuid: row.id,
      name: row.name,
      ignored_files: JSON.parse(row.ignored_files) as string[],
      sha256_hash: row.sha256,
      checksum: row.sha256 === null ? null : `sha256:${row.sha256}`,
      bytes: Number(row.bytes),
      created_at: toWireTime(row.created_at),
      completed_at: toWireTime(row.completed_at),
      is_successful: Number(row.is_successful) === 1,
      is_locked: Number(row.is_locked) === 1,
    },
  };
}
