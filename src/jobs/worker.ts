import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { classifyFailure, type JobFailure } from './job-failure.ts';
import type { JobKind, JobPayloads } from './job-kinds.ts';
import type { JobObserver, JobOutcome, JobResult } from './job-observer.ts';
import type { JobWakeups } from './job-wakeups.ts';
import type { JobRepository } from './job.repository.ts';
import type { JobRow } from './job.table.ts';
import { afterFailure, backoffMs, retryPolicy, type RetryPolicy } from './retry-policy.ts';

export interface JobContext<P> {
  id: number;
  payload: P;
  batch: string;
  /** 1 on the first try; more when an earlier worker died or the job was retried. */
  attempt: number;
  /** Aborted when this worker loses the job's lease (another worker may now own it). */
  signal: AbortSignal;
  /**
   * Renews the lease now and says whether this worker still holds the job. Call it right before
   * a step that must not run twice (a restore's swap): after a true, no other worker can claim
   * the job for a whole lease.
   */
  renewLease(): Promise<boolean>;
}

export interface JobHandler<P> {
  run(job: JobContext<P>): Promise<void | JobResult>;
  /** Called once, when the job has failed for good; `reason` is fit to show the user. */
  fail(job: JobContext<P>, reason: string): Promise<void>;
}

export type JobHandlers = { [K in JobKind]: JobHandler<JobPayloads[K]> };

export interface WorkerDeps {
  jobs: JobRepository;
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
   * How a job that could not reach the backup store or the database is tried again: for how long
   * (AERIE_JOB_RETRY_MINUTES) and with which waits (retry-policy.ts has the defaults).
   */
  retry?: Partial<RetryPolicy>;
}

/** Why a running job was stopped from outside its handler. */
export class JobInterrupted extends Error {
  constructor(readonly why: 'lease-lost' | 'timeout' | 'shutdown') {
    super(
      why === 'lease-lost'
        ? 'the job lease was lost'
        : why === 'timeout'
          ? 'the job ran out of time'
          : 'the worker is stopping',
    );
    this.name = 'JobInterrupted';
  }
}

/** How long an interrupted job may take to clean up before the worker moves on. */
const CLEAN_UP_GRACE_MS = 2000;

async function settledWithin(work: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work?.catch(() => undefined),
    new Promise((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

/** Rejects when `signal` aborts; never settles otherwise. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

/**
 * Claims jobs from the database one at a time and runs them, keeping the job's lease alive
 * while it works. A job whose worker died is claimed again once its lease runs out; a job
 * claimed more often than its `max_attempts` is given up, and its handler told why. Every path
 * ends in a bounded number of attempts, or (for tries that could not reach the backup store or
 * the database, which are retried with growing waits and do not count as attempts) a bounded
 * time: a job that fails, times out, cannot be read, or whose handler cannot even record its
 * failure is still marked failed in the end.
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
    this.retry = retryPolicy(deps.retry);
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

  private async execute(row: JobRow): Promise<void> {
    const handler = (this.deps.handlers as Record<string, JobHandler<unknown> | undefined>)[row.kind];
    let log = this.deps.logger.child({ job: row.id, kind: row.kind, attempt: row.attempts });
    if (handler === undefined) {
      log.error('no handler for this kind of job');
      await this.deps.jobs.finish(
        row.id,
        this.owner,
        'failed',
        `no handler for jobs of kind ${row.kind}`,
        this.now(),
      );
      return;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(row.payload);
    } catch (error) {
      log.error({ err: error }, 'the job payload is not valid JSON');
      await this.deps.jobs.finish(row.id, this.owner, 'failed', 'the job could not be read', this.now());
      return;
    }
    log = log.child(subjectsOf(payload));
    const startedAt = performance.now();
    const ended = (outcome: JobOutcome, bytes: number | null = null) => {
      const durationMs = Math.round(performance.now() - startedAt);
      try {
        this.deps.observer?.jobEnded({ kind: row.kind, outcome, durationMs, bytes });
      } catch (error) {
        log.warn({ err: error }, 'the job observer failed');
      }
      return { durationMs, ...(bytes === null ? {} : { bytes }) };
    };
    const stop = new AbortController();
    const interrupt = (why: JobInterrupted['why']) => {
      if (!stop.signal.aborted) stop.abort(new JobInterrupted(why));
    };
    const job: JobContext<unknown> = {
      id: row.id,
      payload,
      batch: row.batch,
      attempt: row.attempts,
      signal: stop.signal,
      renewLease: async () => {
        const held = await this.deps.jobs.heartbeat(row.id, this.owner, this.now(), this.leaseUntil());
        if (!held) interrupt('lease-lost');
        return held;
      },
    };
    // Tries that could not reach the store or the database are not attempts.
    if (row.attempts - row.unreachable_retries > row.max_attempts) {
      await this.failForGood(
        handler,
        job,
        log,
        `gave up after ${row.max_attempts} attempts that did not finish`,
      );
      ended('failed');
      return;
    }

    const heartbeat = setInterval(
      () => {
        job.renewLease().catch((error: unknown) => log.warn({ err: error }, 'could not renew the job lease'));
      },
      Math.max(50, Math.floor(this.deps.leaseMs / 3)),
    );
    const deadline = setTimeout(() => interrupt('timeout'), this.deps.timeoutMs);
    let running: Promise<void | JobResult> | undefined;
    this.interrupt = interrupt;
    try {
      log.info('job started');
      running = handler.run(job);
      // A handler should stop when its signal aborts; one that does not is left behind.
      const result = await Promise.race([running, whenAborted(stop.signal)]);
      const bytes = typeof result?.bytes === 'number' ? result.bytes : null;
      const finished = () => this.deps.jobs.finish(row.id, this.owner, 'succeeded', null, this.now());
      if (await this.recording(finished, log)) log.info(ended('succeeded', bytes), 'job succeeded');
      else
        log.warn(
          ended('abandoned', bytes),
          'job finished after its lease was lost; the worker that took it over decides its outcome',
        );
      // Not awaited here: a worker asked to stop does not wait for it (it is left for later).
      const afterwards = result?.afterwards;
      if (afterwards !== undefined)
        this.afterwards = afterwards().catch((error: unknown) =>
          log.warn({ err: error }, 'the work a job left for after it ended failed'),
        );
    } catch (error) {
      const cause: unknown = stop.signal.aborted ? stop.signal.reason : undefined;
      // Give an interrupted handler a moment to clean up (remove what it was writing).
      if (cause instanceof JobInterrupted) await settledWithin(running, CLEAN_UP_GRACE_MS);
      if (cause instanceof JobInterrupted && cause.why === 'lease-lost') {
        log.warn({ err: error, ...ended('abandoned') }, 'job abandoned: its lease was lost');
      } else if (cause instanceof JobInterrupted && cause.why === 'shutdown') {
        log.warn(
          ended('abandoned'),
          'job left to its lease: the worker is stopping; another worker will take it over',
        );
      } else {
        const failure: JobFailure =
          cause instanceof JobInterrupted
            ? { kind: 'other', reason: `the job did not finish within ${this.deps.timeoutMs / 1000} seconds` }
            : classifyFailure(error);
        const next = afterFailure(this.retry, row, failure, this.deps.clock().getTime());
        if (!next.retry) {
          log.warn({ err: error, ...ended('failed') }, 'job failed');
          await this.failForGood(handler, job, log, next.reason);
        } else {
          const at = toStoredTime(new Date(next.atMs));
          const since = next.unreachableSinceMs;
          log.warn({ err: error, ...ended('retried'), retryAt: at }, 'job failed; it will be tried again');
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
      }
    } finally {
      this.interrupt = undefined;
      clearInterval(heartbeat);
      clearTimeout(deadline);
    }
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
   * Writes a job's outcome, trying again while the database cannot be reached (for as long as
   * the retry window, and until the worker is asked to stop). Given up at once, the job would stay
   * running until its lease ran out, and then count as an attempt that did not finish.
   */
  private async recording<T>(write: () => Promise<T>, log: Logger): Promise<T> {
    const started = Date.now();
    for (let failures = 0; ; failures++) {
      try {
        return await write();
      } catch (error) {
        const late = Date.now() - started >= this.retry.windowMs;
        if (!isDatabaseUnavailable(error) || this.stopRequested || late) throw error;
        log.warn({ err: error }, 'the database is unreachable: the job outcome will be written again');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, backoffMs(this.retry, failures));
          this.endPause = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.endPause = undefined;
      }
    }
  }
}

/** The server and backup a job is about, from its payload, for its log lines. */
function subjectsOf(payload: unknown): { server?: string; backup?: string } {
  if (typeof payload !== 'object' || payload === null) return {};
  const { serverId, backupId } = payload as { serverId?: unknown; backupId?: unknown };
  return {
    ...(typeof serverId === 'string' ? { server: serverId } : {}),
    ...(typeof backupId === 'string' ? { backup: backupId } : {}),
  };
}

export function defaultNodeName(): string {
  return os.hostname();
}
