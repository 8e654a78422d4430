import { toWireTime } from '../shared/time.ts';
import type { BackupProgress } from './backup-progress.ts';
import type { Backup } from './backup.ts';
import type { BulkDeleteResult } from './backup-management.service.ts';
import type { BackupProgressResource, BackupResource, BulkDeleteResultResource } from './backup.schema.ts';

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
      is_automatic: backup.isAutomatic,
      file_count: backup.files,
      format: backup.format,
      added_bytes: backup.addedBytes,
      progress: toProgressResource(backup.progress),
    },
  };
}

export function toProgressResource(progress: BackupProgress | null): BackupProgressResource | null {
  if (progress === null) return null;
  return {
    operation: progress.operation,
    phase: progress.phase,
    bytes_done: progress.bytesDone,
    bytes_total: progress.bytesTotal,
    files_done: progress.filesDone,
    files_total: progress.filesTotal,
    started_at: toWireTime(progress.startedAt),
    updated_at: toWireTime(progress.updatedAt),
  };
}

export function toBulkDeleteResource(result: BulkDeleteResult): BulkDeleteResultResource {
  return {
    object: 'backup_bulk_delete',
    attributes: {
      deleted: result.deleted.map((backup) => backup.id),
      refused: result.refused.map(({ reference, error }) => ({
        uuid: reference,
        status: String(error.status),
        code: error.code,
        detail: error.message,
      })),
    },
  };
}
