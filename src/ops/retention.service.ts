import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { ReconcileReport } from '../backups/backup-reconcile.service.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { LeaseRepository } from './lease.repository.ts';
import type { RetentionRepository } from './retention.repository.ts';

const DAY_MS = 24 * 3600 * 1000;
/** Finished jobs are kept this long, for the record of what ran. */
export const FINISHED_JOB_RETENTION_DAYS = 7;
const LEASE = 'retention';

export interface RetentionDeps {
  /** Deletes activity entries (with their subjects rows and feed counts) older than `before`, `limit` at a time. */
  activity: { deleteOlderThan(before: string, limit: number): Promise<number> };
  retention: RetentionRepository;
  leases: LeaseRepository;
  clock: Clock;
  logger: Logger;
  /** Activity older than this many days is deleted; 0 keeps all of it. */
  activityRetentionDays: number;
  /** Rows per batch: each batch is one short transaction (activity) or two short statements. */
  batchSize?: number;
  /** The pause between batches, in which other writers go first. */
  pauseMs?: number;
  /** How long the lease lasts without renewal; it is renewed before every batch. */
  leaseMs?: number;
  /** Reconciles backup storage with the backups (`backup reconcile`), after the rows are pruned. */
  reconcileStorage?: () => Promise<ReconcileReport>;
}

export interface RetentionReport {
  activity: number;
  jobs: number;
  sessions: number;
  batches: number;
  durationMs: number;
  /**
   * What reconciling backup storage did: leftovers removed, stalled backups marked failed,
   * backups whose archive is missing, archives no backup owns left alone (`unknown`). Null when
   * it failed (logged; tried again next run), absent when this service does not reconcile.
   */
  storage?: { removed: number; stalled: number; missing: number; unknown: number; errors: number } | null;
}

/**
 * Deletes what Aerie no longer keeps: activity older than the retention period, jobs finished
 * more than 7 days ago, and expired sessions; then removes what backup storage holds that is
 * provably garbage (`BackupReconcileService`, never with `removeUnknown`). It deletes rows in
 * small batches with a pause between them, so no lock is held for long and the API's writes go
 * on meanwhile. Of several processes running it at once, one does the work (it holds the
 * `retention` lease, renewed before every batch) and the others skip that run.
 */
export class RetentionService {
  readonly owner = `retention:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly batchSize: number;
  private readonly pauseMs: number;
  private readonly leaseMs: number;

  constructor(private readonly deps: RetentionDeps) {
    this.batchSize = deps.batchSize ?? 1000;
    this.pauseMs = deps.pauseMs ?? 100;
    this.leaseMs = deps.leaseMs ?? 5 * 60_000;
  }

  private now(offsetMs = 0): string {
    return toStoredTime(new Date(this.deps.clock().getTime() + offsetMs));
  }

  /**
   * One run: every kind of old row, batch by batch, until none is left or `signal` aborts.
   * Returns null when another process holds the lease (it is doing the same work).
   */
  async runOnce(signal?: AbortSignal): Promise<RetentionReport | null> {
    const started = Date.now();
    if (!(await this.renew())) return null;
    const report: RetentionReport = { activity: 0, jobs: 0, sessions: 0, batches: 0, durationMs: 0 };
    try {
      const days = this.deps.activityRetentionDays;
      if (days > 0) {
        const before = this.now(-days * DAY_MS);
        report.activity = await this.prune(report, signal, (limit) =>
          this.deps.activity.deleteOlderThan(before, limit),
        );
      }
      const jobsBefore = this.now(-FINISHED_JOB_RETENTION_DAYS * DAY_MS);
      report.jobs = await this.prune(report, signal, (limit) =>
        this.deps.retention.deleteFinishedJobs(jobsBefore, limit),
      );
      const now = this.now();
      report.sessions = await this.prune(report, signal, (limit) =>
        this.deps.retention.deleteExpiredSessions(now, limit),
      );
      if (this.deps.reconcileStorage !== undefined && signal?.aborted !== true) {
        if (!(await this.renew())) throw new Error('the retention lease was lost to another process');
        report.storage = await this.reconcile(this.deps.reconcileStorage);
      }
    } finally {
      await this.deps.leases.release(LEASE, this.owner, this.now()).catch((error: unknown) => {
        this.deps.logger.warn({ err: error }, 'could not release the retention lease; it runs out by itself');
      });
    }
    report.durationMs = Date.now() - started;
    return report;
  }

  /**
   * Reconciles backup storage; a failure (the store unreachable) is logged and waits for the next
   * run. The archives it leaves alone because nothing proves them garbage are logged every run,
   * until an operator decides about them (`aerie backup reconcile --remove-unknown`).
   */
  private async reconcile(run: () => Promise<ReconcileReport>): Promise<RetentionReport['storage']> {
    try {
      const done = await run();
      if (done.missing.length > 0)
        this.deps.logger.warn(
          { backups: done.missing.map((b) => b.uuid) },
          'backups whose archive is missing from storage',
        );
      if (done.unknown.length > 0)
        this.deps.logger.warn(
          {
            count: done.unknown.length,
            archives: done.unknown.slice(0, 20).map((a) => `${a.disk}:${a.location}`),
          },
          'archives no backup owns and whose deletion is not recorded were left alone: if they are ' +
            'not backups of a restored database, `aerie backup reconcile --remove-unknown` removes them',
        );
      return {
        removed: done.removed.length,
        stalled: done.stalled.length,
        missing: done.missing.length,
        unknown: done.unknown.length,
        errors: done.errors.length,
      };
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not reconcile backup storage; it is tried again next run');
      return null;
    }
  }

  private renew(): Promise<boolean> {
    return this.deps.leases.take(LEASE, this.owner, this.now(), this.now(this.leaseMs));
  }

  /** Runs `batch` until it deletes fewer rows than a batch holds; renews the lease before each. */
  private async prune(
    report: RetentionReport,
    signal: AbortSignal | undefined,
    batch: (limit: number) => Promise<number>,
  ): Promise<number> {
    let deleted = 0;
    for (;;) {
      if (signal?.aborted) return deleted;
      if (report.batches > 0) {
        if (!(await this.renew())) throw new Error('the retention lease was lost to another process');
      }
      const count = await batch(this.batchSize);
      report.batches += 1;
      deleted += count;
      if (count < this.batchSize) return deleted;
      await sleep(this.pauseMs, undefined, signal ? { signal } : {}).catch(() => undefined);
    }
  }
}

export interface RetentionScheduleOptions {
  /** Between the end of one run and the start of the next. */
  intervalMs?: number;
  /** Before the first run: a random delay up to this, so processes started together spread out. */
  firstRunWithinMs?: number;
}

/**
 * Runs retention in the worker role: soon after start, then every hour. A run that fails is
 * logged and tried again at the next interval. `stop()` ends the run in progress after its
 * current batch.
 */
export class RetentionSchedule {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private abort: AbortController | undefined;
  private stopped = true;
  private readonly intervalMs: number;
  private readonly firstRunWithinMs: number;

  constructor(
    private readonly service: RetentionService,
    private readonly logger: Logger,
    options: RetentionScheduleOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 3600_000;
    this.firstRunWithinMs = options.firstRunWithinMs ?? 60_000;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(Math.floor(Math.random() * this.firstRunWithinMs));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort?.abort();
    await this.running;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const abort = (this.abort = new AbortController());
      this.running = this.service
        .runOnce(abort.signal)
        .then(
          (report) => {
            if (report === null) this.logger.debug('retention skipped: another process is running it');
            else this.logger.info({ retention: report }, 'retention: old rows deleted');
          },
          (error: unknown) => this.logger.warn({ err: error }, 'retention run failed; it runs again later'),
        )
        .finally(() => {
          this.running = undefined;
          this.schedule(this.intervalMs);
        });
    }, delay);
    this.timer.unref();
  }
}
