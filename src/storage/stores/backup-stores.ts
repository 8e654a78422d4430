import type { Config } from '../../config.ts';
import type { Clock } from '../../shared/time.ts';
import { LocalBackupStorage, UnavailableBackupStorage, type BackupStorage } from './backup-storage.ts';
import { S3BackupStorage } from './s3-backup-storage.ts';

/** The stores backup archives are kept in, as the configuration chooses them. */
export interface BackupStores {
  /** Where new backups go (AERIE_BACKUP_STORAGE). */
  readonly current: BackupStorage;
  /**
   * The store a backup's `disk` names: a backup made before AERIE_BACKUP_STORAGE changed stays
   * usable where it can be (local archives always; S3 ones only while S3 is configured).
   */
  readonly of: (disk: string) => BackupStorage;
  /** Every store that may hold archives: the local one always (older backups, scratch), S3 when in use. */
  readonly all: readonly BackupStorage[];
  /**
   * Loads now what serving requests will need (the S3 client, for download links and deletions),
   * so that the first such request does not wait for it.
   */
  readonly preload: () => void;
}

export function openBackupStores(
  config: Pick<Config, 'backupsDir' | 'backupStorage'>,
  clock: Clock,
): BackupStores {
  const local = new LocalBackupStorage(config.backupsDir);
  const s3 =
    config.backupStorage.kind === 's3'
      ? new S3BackupStorage(config.backupStorage.s3, {
          scratchDir: config.backupsDir,
          partSize: config.backupStorage.partSizeBytes,
          clock,
        })
      : null;
  const current: BackupStorage = s3 ?? local;
  return {
    current,
    of: (disk) =>
      disk === current.disk ? current : disk === 'local' ? local : new UnavailableBackupStorage('s3'),
    all: s3 === null ? [local] : [local, s3],
    preload: () => s3?.preload(),
  };
}
