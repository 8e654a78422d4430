import pino, { type Logger } from 'pino';
import { createActivityModule } from './activity/activity.module.ts';
import { createApiKeysModule } from './api-keys/api-keys.module.ts';
import { createAuthModule } from './auth/auth.module.ts';
import { createBackupsModule } from './backups/backups.module.ts';
import type { Config } from './config.ts';
import type { Db } from './db/connection.ts';
import { transactorFor } from './db/executor.ts';
import type { JobObserver } from './jobs/job-observer.ts';
import { JobRepository } from './jobs/job.repository.ts';
import { JobWakeups } from './jobs/job-wakeups.ts';
import { PgJobListener } from './jobs/pg-job-listener.ts';
import { Worker, defaultNodeName, type JobHandlers } from './jobs/worker.ts';
import type { ModuleContext } from './module-context.ts';
import { createRestoresModule } from './restores/restores.module.ts';
import { createSchedulesModule } from './schedules/schedules.module.ts';
import { createServerEventsModule } from './server-events/server-events.module.ts';
import { DEFAULT_NODE } from './servers/node-name.ts';
import { createServersModule } from './servers/servers.module.ts';
import type { CounterStore } from './shared/counter-store.ts';
import type { Clock } from './shared/time.ts';
import { openBackupStores } from './storage/stores/backup-stores.ts';
import { createUsersModule } from './users/users.module.ts';

export interface ServiceDeps {
  config: Config;
  db: Db;
  clock: Clock;
  counters: CounterStore;
  logger?: Logger;
  /** Told of every attempt at a job that ends (metrics). */
  jobObserver?: JobObserver;
}

/**
 * Wires the feature modules together, each built from the same context; the HTTP app, the CLI
 * and the tests all start here.
 */
export function createServices({
  config,
  db,
  clock,
  counters,
  logger = pino({ level: 'silent' }),
  jobObserver,
}: ServiceDeps) {
  const context: ModuleContext = {
    config,
    db,
    clock,
    counters,
    logger,
    transaction: transactorFor(db.kysely),
  };
  const users = createUsersModule(context);
  const activity = createActivityModule(context);
  const features = { users: users.repository, activity: activity.activity };
  const servers = createServersModule(context, features);
  // Workers wake when a job is queued: in this process after the commit, and on PostgreSQL also
  // when another process queues one (LISTEN/NOTIFY). Elsewhere other processes' jobs wait for the poll.
  const jobWakeups = new JobWakeups(
    db.kind === 'postgres' ? new PgJobListener(config.database.url, logger) : undefined,
  );
  const jobs = new JobRepository(db.kysely, db.kind, context.transaction, jobWakeups);
  const backupStores = openBackupStores(config, clock);
  const backups = createBackupsModule(context, { ...features, servers, jobs, stores: backupStores });
  const restores = createRestoresModule(context, {
    ...features,
    servers,
    backups: backups.repository,
    jobs,
    stores: backupStores,
    undo: backups.backupManagement,
    snapshots: backups.snapshots,
    files: backups.backupFiles,
  });
  const schedules = createSchedulesModule(context, {
    activity: activity.activity,
    servers,
    jobs,
    backups: backups.backupManagement,
  });
  const jobHandlers: JobHandlers = { ...backups.handlers, ...restores.handlers, ...schedules.handlers };
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
    activity: activity.activity,
    /** The log's rows, which retention prunes. */
    activityRepository: activity.repository,
    ...createApiKeysModule(context, features),
    ...createAuthModule(context, features),
    users: users.users,
    servers: servers.servers,
    subusers: servers.subusers,
    serverQueries: servers.serverQueries,
    access: servers.access,
    backupManagement: backups.backupManagement,
    backupFiles: backups.backupFiles,
    backupRetention: backups.backupRetention,
    backupReconcile: backups.backupReconcile,
    backupRestore: restores.backupRestore,
    schedules: schedules.schedules,
    scheduleRuns: schedules.scheduleRuns,
    /** The scheduler's tick: the processes that run jobs start it (`serve --role all`, `worker`). */
    scheduleTicker: schedules.scheduleTicker,
    ...createServerEventsModule(context, servers),
    jobs,
    jobHandlers,
    jobWakeups,
    /** Where backup archives are kept (readiness checks that the current one takes a write). */
    backupStores,
    createWorker,
  };
}

export type Services = ReturnType<typeof createServices>;
