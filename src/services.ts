import { ActivityRepository } from './activity/activity.repository.ts';
import { ActivityService } from './activity/activity.service.ts';
import { ApiKeyRepository } from './api-keys/api-key.repository.ts';
import { ApiKeyService } from './api-keys/api-key.service.ts';
import { LoginCheckpointRepository } from './auth/login-checkpoint.repository.ts';
import { LoginThrottle } from './auth/login-throttle.ts';
import { PasswordCheck } from './auth/password-check.ts';
import { RecoveryTokenRepository } from './auth/recovery-token.repository.ts';
import { SecretBox } from './auth/secret-box.ts';
import { TwoFactorService } from './auth/two-factor.service.ts';
import { SessionRepository } from './auth/session.repository.ts';
import { SessionService } from './auth/session.service.ts';
import type { Config } from './config.ts';
import type { Db } from './db/connection.ts';
import { transactorFor } from './db/executor.ts';
import type { CounterStore } from './shared/counter-store.ts';
import type { Clock } from './shared/time.ts';
import pino, { type Logger } from 'pino';
import { BackupRepository } from './backups/backup.repository.ts';
import { BackupDeletionRepository } from './backups/backup-deletion.repository.ts';
import { BackupManagementService } from './backups/backup-management.service.ts';
import { BackupRestoreService } from './restores/restore.service.ts';
import { BackupArchiveJob } from './backups/backup.job.ts';
import { BackupReconcileService } from './backups/backup-reconcile.service.ts';
import { ReconcileRepository } from './backups/reconcile.repository.ts';
import { RestoreThrottle } from './restores/restore-throttle.ts';
import { DownloadSigner } from './backups/download-signer.ts';
import { loadAppKey } from './shared/app-key.ts';
import { RestoreJob } from './restores/restore.job.ts';
import { ServerChanges } from './servers/server-changes.ts';
import { ServerEventsRepository } from './server-events/server-events.repository.ts';
import { ServerEventsService } from './server-events/server-events.service.ts';
import { JobRepository } from './jobs/job.repository.ts';
import { JobWakeups } from './jobs/job-wakeups.ts';
import type { JobObserver } from './jobs/job-observer.ts';
import { PgJobListener } from './jobs/pg-job-listener.ts';
import { Worker, defaultNodeName, type JobHandlers } from './jobs/worker.ts';
import { DEFAULT_NODE } from './servers/node-name.ts';
import { ServerAccessService } from './servers/server-access.ts';
import { ServerQueryService } from './servers/server-query.service.ts';
import {
  LocalBackupStorage,
  UnavailableBackupStorage,
  type BackupStorage,
} from './storage/stores/backup-storage.ts';
import { S3BackupStorage } from './storage/stores/s3-backup-storage.ts';
import { ServerRepository } from './servers/server.repository.ts';
import { ServerService } from './servers/server.service.ts';
import { SubuserRepository } from './servers/subuser.repository.ts';
import { SubuserService } from './servers/subuser.service.ts';
import { UserRepository } from './users/user.repository.ts';
import { UserService } from './users/user.service.ts';
import { AccountService } from './users/account.service.ts';

export interface ServiceDeps {
  config: Config;
  db: Db;
  clock: Clock;
  counters: CounterStore;
  logger?: Logger;
  /** Told of every attempt at a job that ends (metrics). */
  jobObserver?: JobObserver;
}

/** Wires repositories into services; the HTTP app and the CLI both start here. */
export function createServices({
  config,
  db,
  clock,
  counters,
  logger = pino({ level: 'silent' }),
  jobObserver,
}: ServiceDeps) {
  const kysely = db.kysely;
  const transaction = transactorFor(kysely);
  const userRepository = new UserRepository(kysely, db.kind);
  const activity = new ActivityService(new ActivityRepository(kysely, db.kind), clock);
  const apiKeys = new ApiKeyService({
    keys: new ApiKeyRepository(kysely, db.kind),
    users: userRepository,
    activity,
    transaction,
    clock,
  });
  const sessionRepository = new SessionRepository(kysely);
  const checkpoints = new LoginCheckpointRepository(kysely);
  const loginThrottle = new LoginThrottle(counters, {
    perAddress: config.loginAttemptsPer15Minutes,
    perAccount: config.loginAccountAttemptsPerHour,
  });
  const passwords = new PasswordCheck(userRepository, loginThrottle);
  const twoFactor = new TwoFactorService({
    users: userRepository,
    recoveryTokens: new RecoveryTokenRepository(kysely),
    checkpoints,
    passwords,
    secrets: new SecretBox(() => loadAppKey(config.appKey, config.dataDir), 'aerie totp secret'),
    activity,
    transaction,
    clock,
  });
  const sessions = new SessionService({
    sessions: sessionRepository,
    users: userRepository,
    checkpoints,
    twoFactor,
    activity,
    throttle: loginThrottle,
    transaction,
    clock,
    ttlSeconds: config.sessionTtlSeconds,
  });
  const account = new AccountService({
    users: userRepository,
    sessions: sessionRepository,
    checkpoints,
    passwords,
    activity,
    transaction,
    clock,
  });
  const users = new UserService(userRepository, clock);
  const serverRepository = new ServerRepository(kysely);
  const access = new ServerAccessService(serverRepository);
  const subusers = new SubuserService({
    subusers: new SubuserRepository(kysely),
    servers: serverRepository,
    users: userRepository,
    activity,
    transaction,
    clock,
  });
  const servers = new ServerService({
    servers: serverRepository,
    users: userRepository,
    clock,
    volumesDir: config.volumesDir,
  });
  const serverQueries = new ServerQueryService({ servers: serverRepository });
  // Workers wake when a job is queued: in this process after the commit, and on PostgreSQL also
  // when another process queues one (LISTEN/NOTIFY). Elsewhere other processes' jobs wait for the poll.
  const jobWakeups = new JobWakeups(
    db.kind === 'postgres' ? new PgJobListener(config.database.url, logger) : undefined,
  );
  const jobs = new JobRepository(kysely, db.kind, transaction, jobWakeups);
  const localStorage = new LocalBackupStorage(config.backupsDir);
  // New backups go to `storage`; an existing one is read from the store its `disk` names, so
  // that backups made before AERIE_BACKUP_STORAGE changed stay usable where they can be.
  const storage: BackupStorage =
    config.backupStorage.kind === 's3'
      ? new S3BackupStorage(config.backupStorage.s3, {
          scratchDir: config.backupsDir,
          partSize: config.backupStorage.partSizeBytes,
          clock,
        })
      : localStorage;
  const storageOf = (disk: string): BackupStorage =>
    disk === storage.disk ? storage : disk === 'local' ? localStorage : new UnavailableBackupStorage('s3');
  // Changes to backups and restores made in this process reach its event streams at once.
  const serverChanges = new ServerChanges();
  const serverEvents = new ServerEventsService({
    repository: new ServerEventsRepository(kysely),
    changes: serverChanges,
    intervalMs: config.progressIntervalMs,
    logger,
  });
  const progress = { logger, intervalMs: config.progressIntervalMs };
  const backupRepository = new BackupRepository(kysely, serverChanges);
  const backupDeletions = new BackupDeletionRepository(kysely);
  const backupRestore = new BackupRestoreService({
    servers: serverRepository,
    backups: backupRepository,
    jobs,
    activity,
    transaction,
    clock,
    changes: serverChanges,
    throttle: new RestoreThrottle(
      counters,
      config.apiRateLimitPerMinute === 0 ? null : config.restoreLimitPer15Minutes,
    ),
  });
  // Both stores are taken stock of when backups go to S3: the local one holds the backups made
  // before, and the scratch files of imports to S3.
  const backupReconcile = new BackupReconcileService({
    backups: backupRepository,
    deletions: backupDeletions,
    reconcile: new ReconcileRepository(kysely),
    stores: storage === localStorage ? [localStorage] : [localStorage, storage],
    activity,
    transaction,
    clock,
    logger,
  });
  const backupManagement = new BackupManagementService({
    backups: backupRepository,
    deletions: backupDeletions,
    servers: serverRepository,
    jobs,
    activity,
    storage,
    storageOf,
    signer: new DownloadSigner(() => loadAppKey(config.appKey, config.dataDir)),
    transaction,
    clock,
    logger,
    progress,
    volumeOf: (server) => servers.volumeOf(server),
  });
  const jobHandlers: JobHandlers = {
    'backup.create': new BackupArchiveJob({
      backups: backupRepository,
      users: userRepository,
      activity,
      storage,
      transaction,
      clock,
      volumeOf: (server) => servers.volumeOf(server),
      progress,
    }),
    'backup.restore': new RestoreJob({
      backups: backupRepository,
      servers: serverRepository,
      users: userRepository,
      activity,
      storageOf,
      transaction,
      clock,
      volumesDir: config.volumesDir,
      logger,
      progress,
      changes: serverChanges,
    }),
  };
  /** A worker for the jobs of `onlyNode`'s servers (and of no server), named `name` in logs and leases. */
  const createWorker = (name = defaultNodeName(), onlyNode = DEFAULT_NODE) =>
    new Worker({
      jobs,
      handlers: jobHandlers,
      clock,
      logger,
      node: name,
      onlyNode,
      pollMs: config.workerPollMs,
      wakeups: jobWakeups,
      leaseMs: config.jobLeaseMs,
      ...(jobObserver ? { observer: jobObserver } : {}),
      timeoutMs: config.jobTimeoutMs,
      retry: { windowMs: config.jobRetryWindowMs },
    });
  return {
    activity,
    apiKeys,
    sessions,
    account,
    twoFactor,
    users,
    servers,
    subusers,
    serverQueries,
    access,
    backupManagement,
    backupRestore,
    /** Watches servers for the event streams. */
    serverEvents,
    jobs,
    jobHandlers,
    jobWakeups,
    /** Where backup archives are kept (readiness checks that it takes a write). */
    backupStorage: storage,
    /** Removes what backup storage holds that is garbage (`backup reconcile`, retention). */
    backupReconcile,
    createWorker,
  };
}

export type Services = ReturnType<typeof createServices>;
