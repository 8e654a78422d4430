import path from 'node:path';
import type { ActivityService } from '../activity/activity.service.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { ModuleContext } from '../module-context.ts';
import type { ServersModule } from '../servers/servers.module.ts';
import { loadAppKey } from '../shared/app-key.ts';
import type { BackupStores } from '../storage/stores/backup-stores.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { BackupFiles } from './backup-files.ts';
import { BackupDeletionRepository } from './backup-deletion.repository.ts';
import { BackupManagementService } from './backup-management.service.ts';
import { BackupReconcileService } from './backup-reconcile.service.ts';
import { BackupRetentionRepository } from './backup-retention.repository.ts';
import { BackupRetentionService } from './backup-retention.service.ts';
import { BackupArchiveJob } from './backup.job.ts';
import { BackupRepository } from './backup.repository.ts';
import { DownloadSigner } from './download-signer.ts';
import { ReconcileRepository } from './reconcile.repository.ts';
import { RepositoryLocks } from './repository-locks.ts';
import { SnapshotBackups } from './snapshot-backups.ts';

export interface BackupsModuleDeps {
  users: UserRepository;
  activity: ActivityService;
  servers: ServersModule;
  jobs: JobRepository;
  stores: BackupStores;
}

/**
 * Backups: made (the `backup.create` job, by hand or by a schedule), listed, locked, downloaded and
 * deleted (one or many), retention policies, and the stores kept in step with the rows (reconcile).
 */
export function createBackupsModule(
  { config, db, transaction, clock, logger }: ModuleContext,
  { users, activity, servers, jobs, stores }: BackupsModuleDeps,
) {
  const progress = { logger, intervalMs: config.progressIntervalMs };
  const volumeOf = servers.servers.volumeOf.bind(servers.servers);
  const repository = new BackupRepository(db.kysely, servers.changes);
  const deletions = new BackupDeletionRepository(db.kysely);
  const snapshots = new SnapshotBackups({
    backups: repository,
    storageOf: stores.of,
    locks: new RepositoryLocks(db, clock),
    volumeOf,
  });
  const signer = new DownloadSigner(() => loadAppKey(config.appKey, config.dataDir));
  const backupFiles = new BackupFiles({
    snapshots,
    storageOf: stores.of,
    activity,
    signer,
    clock,
    catalogsDir: path.join(config.dataDir, 'cache', 'catalogs'),
  });
  const backupManagement = new BackupManagementService({
    backups: repository,
    deletions,
    servers: servers.repository,
    jobs,
    activity,
    storage: stores.current,
    storageOf: stores.of,
    signer,
    transaction,
    clock,
    logger,
    progress,
    volumeOf,
    format: config.backupFormat,
    snapshots,
    files: backupFiles,
  });
  const backupRetention = new BackupRetentionService({
    retention: new BackupRetentionRepository(db.kysely),
    backups: repository,
    servers: servers.repository,
    management: backupManagement,
    activity,
    transaction,
    clock,
    logger,
    // Periods are counted in the zone schedules run in.
    timeZone: config.schedules.timezone,
  });
  return {
    repository,
    backupManagement,
    /** Backups kept as snapshots: made, removed, downloaded, their repositories. */
    snapshots,
    /** Looking inside a backup: its directories listed, one file downloaded. */
    backupFiles,
    /** Retention policies of automatic backups: set, previewed, applied after each one. */
    backupRetention,
    /** Removes what backup storage holds that is garbage (`backup reconcile`, retention). */
    backupReconcile: new BackupReconcileService({
      backups: repository,
      deletions,
      reconcile: new ReconcileRepository(db.kysely),
      stores: stores.all,
      activity,
      transaction,
      clock,
      logger,
    }),
    handlers: {
      'backup.create': new BackupArchiveJob({
        backups: repository,
        users,
        activity,
        storage: stores.current,
        transaction,
        clock,
        volumeOf,
        progress,
        snapshots,
        retention: backupRetention,
      }),
    },
  };
}
