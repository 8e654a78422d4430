import type { ActivityService } from '../activity/activity.service.ts';
import type { BackupRepository } from '../backups/backup.repository.ts';
import type { JobRepository } from '../jobs/job.repository.ts';
import type { ModuleContext } from '../module-context.ts';
import type { ServersModule } from '../servers/servers.module.ts';
import type { BackupStores } from '../storage/stores/backup-stores.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { RestoreThrottle } from './restore-throttle.ts';
import { RestoreJob, type RestoreJobDeps } from './restore.job.ts';
import { BackupRestoreService, type BackupRestoreDeps } from './restore.service.ts';

export interface RestoresModuleDeps {
  users: UserRepository;
  activity: ActivityService;
  servers: ServersModule;
  backups: BackupRepository;
  jobs: JobRepository;
  stores: BackupStores;
  /** Takes the backup that lets a restore be undone. */
  undo: RestoreJobDeps['undo'];
  /** Holds a snapshot's repository while a restore reads it. */
  snapshots: RestoreJobDeps['snapshots'];
  /**
   * What a backup holds (a partial restore's paths are checked against it), and where in a
   * .tar.gz backup's archive they are (a partial restore reads those pieces alone).
   */
  files: BackupRestoreDeps['files'] & NonNullable<RestoreJobDeps['slices']>;
}

/** Restores: asked for (throttled per server), then run by the `backup.restore` job. */
export function createRestoresModule(
  { config, transaction, clock, logger, counters }: ModuleContext,
  { users, activity, servers, backups, jobs, stores, undo, snapshots, files }: RestoresModuleDeps,
) {
  return {
    backupRestore: new BackupRestoreService({
      servers: servers.repository,
      backups,
      jobs,
      activity,
      transaction,
      clock,
      changes: servers.changes,
      files,
      undoBackup: config.restoreUndoBackup,
      throttle: new RestoreThrottle(
        counters,
        config.apiRateLimitPerMinute === 0 ? null : config.restoreLimitPer15Minutes,
      ),
    }),
    handlers: {
      'backup.restore': new RestoreJob({
        backups,
        servers: servers.repository,
        users,
        activity,
        storageOf: stores.of,
        transaction,
        clock,
        volumesDir: config.volumesDir,
        logger,
        progress: { logger, intervalMs: config.progressIntervalMs },
        changes: servers.changes,
        undo,
        snapshots,
        slices: files,
      }),
    },
  };
}
