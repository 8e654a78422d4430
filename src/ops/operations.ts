import type { Logger } from 'pino';
import type { ReconcileReport } from '../backups/backup-reconcile.service.ts';
import type { ActivityRepository } from '../activity/activity.repository.ts';
import { ConfigError, type Config } from '../config.ts';
import type { Db } from '../db/connection.ts';
import { knownMigrations } from '../db/migrate.ts';
import { Metrics } from '../metrics/metrics.ts';
import type { SharedCounterHealth } from '../shared/fallback-counter-store.ts';
import type { Clock } from '../shared/time.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import { HealthService, probeBackupStorage } from './health.service.ts';
import { LeaseRepository } from './lease.repository.ts';
import { RetentionRepository } from './retention.repository.ts';
import { RetentionSchedule, RetentionService } from './retention.service.ts';
import { StatusRepository } from './status.repository.ts';

export interface OperationsDeps {
  config: Config;
  db: Db;
  clock: Clock;
  logger: Logger;
  /** Every kind of job the workers run. */
  jobKinds: readonly string[];
  /** Where backups are kept: readiness checks it takes a write. */
  backupStorage: BackupStorage;
  /** The activity log, which retention prunes. */
  activity: ActivityRepository;
  /** Reconciles backup storage with the backups; retention runs it after pruning rows. */
  reconcileStorage?: () => Promise<ReconcileReport>;
  /** The shared counters (Redis), when REDIS_URL is set: readiness and metrics report them. */
  sharedCounters?: SharedCounterHealth | null;
}

/** What keeps a deployment observable and tidy: readiness, metrics (when on) and retention. */
export interface Operations {
  readonly health: HealthService;
  /** Null unless AERIE_METRICS is on. */
  readonly metrics: Metrics | null;
  readonly retention: RetentionService;
  /** Runs retention periodically; the worker role starts it. */
  readonly retentionSchedule: RetentionSchedule;
  /**
   * What a long-running process adds beside its work: the metrics listener (AERIE_METRICS_ADDRESS)
   * and, in the worker role (`jobs`), periodic retention. `http` says whether the process serves
   * the API, whose listener carries `/metrics` when no address of their own is set.
   */
  start(role: { jobs: boolean; http: boolean }): Promise<void>;
  /** Stops retention after its current batch and closes the metrics listener. */
  close(): Promise<void>;
}

export function createOperations({
  config,
  db,
  clock,
  logger,
  jobKinds,
  backupStorage,
  activity,
  reconcileStorage,
  sharedCounters = null,
}: OperationsDeps): Operations {
  const status = new StatusRepository(db.kysely);
  const health = new HealthService({
    status,
    knownMigrations: knownMigrations(db),
    probeStorage: () => probeBackupStorage(backupStorage),
    ...(sharedCounters === null ? {} : { probeRedis: () => sharedCounters.probe() }),
    logger,
  });
  const metrics = config.metrics.enabled
    ? new Metrics({ queuedJobs: () => status.queuedJobsByKind(), jobKinds, logger, redis: sharedCounters })
    : null;
  const retention = new RetentionService({
    activity,
    retention: new RetentionRepository(db.kysely),
    leases: new LeaseRepository(db.kysely),
    clock,
    logger,
    activityRetentionDays: config.activityRetentionDays,
    ...(reconcileStorage ? { reconcileStorage } : {}),
  });
  const retentionSchedule = new RetentionSchedule(retention, logger);
  return {
    health,
    metrics,
    retention,
    retentionSchedule,
    async start({ jobs, http }) {
      const address = config.metrics.address;
      if (metrics !== null && address !== null) {
        await metrics.listen(address).catch((error: unknown) => {
          if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
            throw new ConfigError(
              `AERIE_METRICS_ADDRESS ${address.host}:${address.port} is already in use (give each process its own)`,
            );
          throw error;
        });
        const host = address.host.includes(':') ? `[${address.host}]` : address.host;
        logger.info({ metrics: `http://${host}:${address.port}/metrics` }, 'serving metrics');
      } else if (metrics !== null && !http) {
        logger.warn(
          'AERIE_METRICS is on, but this process serves no HTTP: set AERIE_METRICS_ADDRESS to scrape it',
        );
      }
      if (jobs) retentionSchedule.start();
    },
    async close() {
      await Promise.all([retentionSchedule.stop(), metrics?.close()]);
    },
  };
}
