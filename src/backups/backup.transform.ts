import { toWireTime } from '../shared/time.ts';
import type { Backup } from './backup.ts';
import type { BackupResource } from './backup.schema.ts';

export function toBackupResource(backup: Backup): BackupResource {
  return {
    object: 'backup',
    attributes: {
      uuid: backup.id,
      name: backup.name,
      ignored_files: [...backup.ignoredFiles],
      sha256_hash: backup.sha256,
      checksum: backup.sha256 === null ? null : `sha256:${backup.sha256}`,
      bytes: backup.bytes,
      created_at: toWireTime(backup.createdAt),
      completed_at: toWireTime(backup.completedAt),
      is_successful: backup.isSuccessful,
      is_locked: backup.isLocked,
    },
  };
}
