import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { JobAttempt } from './job-attempt.ts';
import { classifyFailure, type JobFailure } from './job-failure.ts';
import type { JobContext, JobHandler, JobHandlers } from './job-handler.ts';
import type { JobObserver, JobResult } from './job-observer.ts';
import { readJob, subjectsOf, type ReadJob } from './job-payloads.ts';
import type { JobWakeups } from './job-wakeups.ts';
import type { JobRepository } from './job.repository.ts';
import type { JobRow } from './job.table.ts';
import { asRetryPolicy, type RetryPolicy, type RetryPolicyOptions } from './retry-policy.ts';

export type { JobContext, JobHandler, JobHandlers, PayloadSchema } from './job-handler.ts';
export { JobInterrupted } from './job-attempt.ts';

export interface WorkerDeps {
  jobs: JobRepository;
  /** A handler for each kind of job, with the schema of its payload (job-handler.ts). */
  handlers: JobHandlers;
  clock: Clock;
  logger: Logger;
  /** Names this worker in logs and in the leases it holds. */
  node: string;
  /**
   * Runs only the jobs of this node's servers (and those of no server); every job when unset.
   * A worker runs beside its node's volumes, so it must never take another node's jobs.
   */
  onlyNode?: string;
  /** How long an idle worker waits before it looks again, when no wake-up comes first. */
  pollMs: number;
  /** Wakes the worker when a job is queued; without it the worker only polls. */
  wakeups?: JobWakeups;
  leaseMs: number;
  /** How long one attempt may run; past it the job is stopped and counts as a failed attempt. */
  timeoutMs: number;
  /** Told how each attempt ended (metrics). */
  observer?: JobObserver;
  /**
   * When a failed job is tried again: the policy, or the options that differ from its defaults
   * (retry-policy.ts), such as how long a job that could not reach the backup store or the
   * database keeps trying (AERIE_JOB_RETRY_MINUTES).
   */
  retry?: RetryPolicy | Partial<RetryPolicyOptions>;
}

/**
 * Claims jobs from the database one at a time and runs them, keeping the job's lease alive
 * while it works. A job whose worker died is claimed again once its lease runs out; a job
 * claimed more often than its `max_attempts` is given up, and its handler told why. Every path
 * ends in a bounded number of attempts, or (for tries that could not reach the backup store or
 * the database, which are retried with growing waits and do not count as attempts) a bounded
 * time: a job that fails, times out, cannot be read (or holds no payload of its kind), or whose
 * handler cannot even record its failure is still marked failed in the end. What a failure means
 * for trying again is the handler's to say (job-failure.ts); when and how often, the retry
 * policy's (retry-policy.ts).
 */
export class Worker {
  readonly owner: string;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<unknown> | undefined;
  /** Stops the job in hand; set while one runs. */
  private interrupt: ((why: 'shutdown') => void) | undefined;
  private stopped = true;
  /** True from the start of a claim until the worker next waits. */
  private busy = false;
  /** A wake-up came while busy: look again at once rather than after the poll interval. */
  private woken = false;
  /** Set by stop(), cleared by start(): no job is claimed once a stop was asked for. */
  private stopRequested = false;
  /** What the last job left for after it ended (JobResult.afterwards); never rejects. */
  private afterwards: Promise<void> = Promise.resolve();
  private unsubscribe: (() => Promise<void>) | undefined;
  private readonly retry: RetryPolicy;
  /** Ends the wait between two tries at recording an outcome (see `recording`); set while one runs. */
  private endPause: (() => void) | undefined;

  constructor(private readonly deps: WorkerDeps) {
    this.owner = `${deps.node}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.retry = asRetryPolicy(deps.retry);
  }

  start(): void {
    this.stopped = false;
    this.stopRequested = false;
    this.unsubscribe ??= this.deps.wakeups?.subscribe(() => this.wake());
    this.schedule(0);
  }

  /**
   * Stops claiming, and waits up to `deadlineMs` for the job in hand to end. Past the deadline
   * the job is stopped and left to its lease, unfinished: once the lease runs out another worker
   * claims it (as it would after a crash). Says whether a job had to be left so.
   */
  async stop(deadlineMs = Number.POSITIVE_INFINITY): Promise<{ abandoned: boolean }> {
    this.stopped = true;
    this.stopRequested = true;
    this.endPause?.();
    clearTimeout(this.timer);
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    const [outcome] = await Promise.all([this.endCurrent(deadlineMs), unsubscribe?.()]);
    return outcome;
  }

  private async endCurrent(deadlineMs: number): Promise<{ abandoned: boolean }> {
    const current = this.current;
    if (current === undefined) return { abandoned: false };
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      current.then(() => true),
      new Promise<false>((resolve) => {
        if (Number.isFinite(deadlineMs)) timer = setTimeout(() => resolve(false), deadlineMs);
      }),
    ]);
    clearTimeout(timer);
    if (ended || this.interrupt === undefined) return { abandoned: false };
    this.interrupt('shutdown');
    await current;
    return { abandoned: true };
  }

  /**
   * A job may be waiting: an idle worker looks now instead of at its next poll. A busy one (whose
   * claim may have started before the job was committed) looks again as soon as it is done.
   */
  private wake(): void {
    if (this.stopped) return;
    if (this.busy) {
      this.woken = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.busy = true;
      this.woken = false;
      this.current = this.runOnce()
        .catch((error: unknown) => {
          this.deps.logger.error({ err: error }, 'the job worker failed to claim or finish a job');
          // After a failure, wait out the poll even if woken: the database may be down.
          this.woken = false;
          return false;
        })
        .then((worked) => {
          this.busy = false;
          this.schedule(worked || this.woken ? 0 : this.deps.pollMs);
        });
    }, delay);
  }

  private leaseUntil(): string {
    return toStoredTime(new Date(this.deps.clock().getTime() + this.deps.leaseMs));
  }

  private now(): string {
    return toStoredTime(this.deps.clock());
  }

  /** Claims and runs one job; false when none was due. */
  async runOnce(): Promise<boolean> {
    // What the previous job left for afterwards ends before another job starts (or, should the
    // worker be asked to stop meanwhile, before it stops).
    await this.afterwards;
    if (this.stopRequested) return false;
    const row = await this.deps.jobs.claim(this.owner, this.now(), this.leaseUntil(), this.deps.onlyNode);
    if (row === undefined) return false;
    await this.execute(row);
    return true;
  }

  /** Runs a claimed job under its lease and time limit, and records how it ended. */
  private async execute(row: JobRow): Promise<void> {
    const read = readJob(row, this.deps.handlers);
    if (!read.readable) return this.unreadable(row, read);
    const { handler, payload } = read;
    const log = this.logOf(row).child(subjectsOf(payload));
    const attempt = new JobAttempt(row, payload, {
      renewLease: () => this.deps.jobs.heartbeat(row.id, this.owner, this.now(), this.leaseUntil()),
      observer: this.deps.observer,
      log,
    });
    const givenUp = this.retry.givenUp(row);
    if (givenUp !== null) {
      await this.failForGood(handler, attempt.job, log, givenUp);
      attempt.ended('failed');
      return;
    }
    const unwatch = attempt.watch(this.deps.leaseMs, this.deps.timeoutMs);
    this.interrupt = (why) => attempt.interrupt(why);
    try {
      log.info('job started');
      await this.succeeded(row, attempt, await attempt.run(handler), log);
    } catch (error) {
      await this.failed(row, handler, attempt, error, log);
    } finally {
      this.interrupt = undefined;
      unwatch();
    }
  }

  private logOf(row: JobRow): Logger {
    return this.deps.logger.child({ job: row.id, kind: row.kind, attempt: row.attempts });
  }

  /** Fails a job that can never run (of no known kind, or whose payload is not one), at once. */
  private async unreadable(row: JobRow, read: Extract<ReadJob, { readable: false }>): Promise<void> {
    this.logOf(row).error(read.details ?? {}, read.problem);
    await this.deps.jobs.finish(row.id, this.owner, 'failed', read.reason, this.now());
  }

  /** Records the job succeeded, and keeps what it left for afterwards for before the next claim. */
  private async succeeded(
    row: JobRow,
    attempt: JobAttempt,
    result: void | JobResult,
    log: Logger,
  ): Promise<void> {
    const bytes = typeof result?.bytes === 'number' ? result.bytes : null;
    const finished = () => this.deps.jobs.finish(row.id, this.owner, 'succeeded', null, this.now());
    if (await this.recording(finished, log)) log.info(attempt.ended('succeeded', bytes), 'job succeeded');
    else
      log.warn(
        attempt.ended('abandoned', bytes),
        'job finished after its lease was lost; the worker that took it over decides its outcome',
      );
    // Not awaited here: a worker asked to stop does not wait for it (it is left for later).
    const afterwards = result?.afterwards;
    if (afterwards !== undefined)
      this.afterwards = afterwards().catch((error: unknown) =>
        log.warn({ err: error }, 'the work a job left for after it ended failed'),
      );
  }

  /**
   * After an attempt that threw or was stopped: leaves the job to its lease when the lease was
   * lost or the worker is stopping; otherwise retries it later or fails it for good, as the retry
   * policy says.
   */
  private async failed(
    row: JobRow,
    handler: JobHandler<unknown>,
    attempt: JobAttempt,
    error: unknown,
    log: Logger,
  ): Promise<void> {
    const interrupted = await attempt.interruption();
    if (interrupted?.why === 'lease-lost') {
      log.warn({ err: error, ...attempt.ended('abandoned') }, 'job abandoned: its lease was lost');
      return;
    }
    if (interrupted?.why === 'shutdown') {
      log.warn(
        attempt.ended('abandoned'),
        'job left to its lease: the worker is stopping; another worker will take it over',
      );
      return;
    }
    const failure: JobFailure =
      interrupted === undefined
        ? classifyFailure(error)
        : { kind: 'other', reason: `the job did not finish within ${this.deps.timeoutMs / 1000} seconds` };
    const next = this.retry.afterFailure(row, failure, this.deps.clock().getTime());
    if (!next.retry) {
      log.warn({ err: error, ...attempt.ended('failed') }, 'job failed');
      await this.failForGood(handler, attempt.job, log, next.reason);
      return;
    }
    const at = toStoredTime(new Date(next.atMs));
    const since = next.unreachableSinceMs;
    log.warn({ err: error, ...attempt.ended('retried'), retryAt: at }, 'job failed; it will be tried again');
    await this.recording(
      () =>
        this.deps.jobs.retryLater(
          row.id,
          this.owner,
          next.reason,
          at,
          this.now(),
          since === undefined ? undefined : toStoredTime(new Date(since)),
        ),
      log,
    );
  }

  /** Tells the handler (which records the failure for the user) and marks the job failed, even if the handler cannot. */
  private async failForGood(
    handler: JobHandler<unknown>,
    job: JobContext<unknown>,
    log: Logger,
    reason: string,
  ): Promise<void> {
    log.warn({ reason }, 'job failed for good');
    try {
      await handler.fail(job, reason);
    } catch (error) {
      log.error({ err: error }, 'the job handler could not record its failure');
    }
    await this.recording(() => this.deps.jobs.finish(job.id, this.owner, 'failed', reason, this.now()), log);
  }

  /**
   * Writes a job's outcome, trying again while the database cannot be reached (with the retry
   * policy's waits, for as long as its window, and until the worker is asked to stop). Given up
   * at once, the job would stay running until its lease ran out, and then count as an attempt
   * that did not finish.
   */
  private async recording<T>(write: () => Promise<T>, log: Logger): Promise<T> {
    const started = Date.now();
    for (let failures = 0; ; failures++) {
      try {
        return await write();
      } catch (error) {
        if (!isDatabaseUnavailable(error) || this.stopRequested) throw error;
        const wait = this.retry.writeAgainInMs(failures, Date.now() - started);
        if (wait === null) throw error;
        log.warn({ err: error }, 'the database is unreachable: the job outcome will be written again');
        await this.pause(wait);
      }
    }
  }

  /** Waits `ms`, or less if the worker is asked to stop meanwhile. */
  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.endPause = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.endPause = undefined;
  }
}

export function defaultNodeName(): string {
  return os.hostname();
}
