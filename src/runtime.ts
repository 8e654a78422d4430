import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { connect, type Db } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { createLogger, type LogDestination } from './logger.ts';
import { createOperations, type Operations } from './ops/operations.ts';
import { createServices, type Services } from './services.ts';
import { MemoryCounterStore, type CounterStore } from './shared/counter-store.ts';
import { FallbackCounterStore } from './shared/fallback-counter-store.ts';
import { RedisCounterStore } from './shared/redis-counter-store.ts';
import { systemClock, type Clock } from './shared/time.ts';

export interface RuntimeOptions {
  /** The services' clock: the system's, unless a test sets one. */
  clock?: Clock;
  /** Where the logs go (see `LogDestination`); stdout unless set. */
  logTo?: LogDestination;
}

/**
 * Everything an Aerie process runs on, opened once by `openRuntime`: `serve`, `worker`, every
 * command of the CLI and the test harness all start from one.
 */
export interface Runtime {
  readonly config: Config;
  readonly db: Db;
  /**
   * Throttle and rate-limit counters: in Redis when REDIS_URL is set, shared by every process
   * (in this process's memory while Redis does not answer); else in memory.
   */
  readonly counters: CounterStore;
  readonly logger: Logger;
  readonly services: Services;
  /** Readiness checks, metrics (when on) and retention (which the worker role starts). */
  readonly ops: Operations;
  /** The migrations applied while opening, by name; none when the schema was up to date. */
  readonly migrations: readonly string[];
  /** Closes what `openRuntime` opened: the job listener and counters first, then the database. Safe to call twice. */
  close(): Promise<void>;
}

/** Creates the logger, connects, migrates, picks the counter store and builds the services. */
export async function openRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = createLogger(config.logLevel, options.logTo, config.logFormat);
  const db = connect(config.database);
  let counters: CounterStore | undefined;
  let services: Services | undefined;
  let ops: Operations | undefined;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      try {
        await ops?.close();
        await services?.scheduleTicker.stop();
        await services?.jobWakeups.close();
        await counters?.close();
      } finally {
        await db.destroy();
      }
    })());
  try {
    const result = await migrateToLatest(db);
    const migrations = (result.results ?? [])
      .filter((r) => r.status === 'Success')
      .map((r) => r.migrationName);
    const shared =
      config.redisUrl === null
        ? null
        : new FallbackCounterStore(
            new RedisCounterStore(config.redisUrl, { timeoutMs: config.redisTimeoutMs }),
            new MemoryCounterStore(),
            { timeoutMs: config.redisTimeoutMs, logger },
          );
    counters = shared ?? new MemoryCounterStore();
    const clock = options.clock ?? systemClock;
    services = createServices({
      config,
      db,
      clock,
      counters,
      logger,
      ...(config.metrics.enabled ? { jobObserver: { jobEnded: (end) => ops?.metrics?.jobEnded(end) } } : {}),
    });
    const reconcile = services.backupReconcile;
    ops = createOperations({
      config,
      db,
      clock,
      logger,
      jobKinds: Object.keys(services.jobHandlers),
      backupStorage: services.backupStores.current,
      activity: services.activityRepository,
      reconcileStorage: () => reconcile.run(),
      sharedCounters: shared,
    });
    return { config, db, counters, logger, services, ops, migrations, close };
  } catch (error) {
    await close();
    throw error;
  }
}
