import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import { AppError } from '../shared/errors.ts';
import { ArchiveError } from '../storage/archive.types.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { JobKind, JobPayloads } from './job-kinds.ts';
import type { JobRepository } from './job.repository.ts';
import type { JobRow } from './job.table.ts';

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
  run(job: JobContext<P>): Promise<void>;
  /** Called once, when the job has failed for good; `reason` is fit to show the user. */
  fail(job: JobContext<P>, reason: string): Promise<void>;
}

export type JobHandlers = { [K in JobKind]: JobHandler<JobPayloads[K]> };

export interface WorkerOptions {
  node: string;
  pollMs: number;
  leaseMs: number;
}

/** Failures that another try cannot mend: bad archives, refused requests. */
function isPermanent(error: unknown): boolean {
  return error instanceof ArchiveError || error instanceof AppError;
}

/** What the user is told: our own errors speak for themselves; anything else stays in the log. */
export function reasonOf(error: unknown): string {
  if (error instanceof ArchiveError || error instanceof AppError) return error.message;
  return 'an internal error occurred; the server log has the details';
}

/**
 * Claims jobs from the database one at a time and runs them, keeping the job's lease alive
 * while it works. A job whose worker died is claimed again once its lease runs out; a job
 * claimed more often than its `max_attempts` is given up, and its handler told why.
 */
export class Worker {
  readonly owner: string;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<unknown> | undefined;
  private stopped = true;

  constructor(
    private readonly jobs: JobRepository,
    private readonly handlers: JobHandlers,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: WorkerOptions,
  ) {
    this.owner = `${options.node}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops claiming, and waits for the job in hand to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.current = this.runOnce()
        .catch((error: unknown) => {
          this.logger.error({ err: error }, 'the job worker failed to claim or finish a job');
          return false;
        })
        .then((worked) => this.schedule(worked ? 0 : this.options.pollMs));
    }, delay);
  }

  private leaseUntil(): string {
    return toStoredTime(new Date(this.clock().getTime() + this.options.leaseMs));
  }

  /** Claims and runs one job; false when none was due. */
  async runOnce(): Promise<boolean> {
    const row = await this.jobs.claim(this.owner, toStoredTime(this.clock()), this.leaseUntil());
    if (row === undefined) return false;
    await this.execute(row);
    return true;
  }

  private async execute(row: JobRow): Promise<void> {
    const handler = (this.handlers as Record<string, JobHandler<unknown> | undefined>)[row.kind];
    const log = this.logger.child({ job: row.id, kind: row.kind, attempt: row.attempts });
    const now = () => toStoredTime(this.clock());
    if (handler === undefined) {
      log.error('no handler for this kind of job');
      await this.jobs.finish(row.id, this.owner, 'failed', `no handler for jobs of kind ${row.kind}`, now());
      return;
    }
    const lease = new AbortController();
    const job: JobContext<unknown> = {
      id: row.id,
      payload: JSON.parse(row.payload) as unknown,
      batch: row.batch,
      attempt: row.attempts,
      signal: lease.signal,
      renewLease: async () => {
        const held = await this.jobs.heartbeat(row.id, this.owner, now(), this.leaseUntil());
        if (!held) lease.abort(new Error('the job lease was lost'));
        return held;
      },
    };
    if (row.attempts > row.max_attempts) {
      const reason = `gave up after ${row.max_attempts} attempts that did not finish`;
      log.warn(reason);
      await handler.fail(job, reason);
      await this.jobs.finish(row.id, this.owner, 'failed', reason, now());
      return;
    }

    const heartbeat = setInterval(
      () => {
        this.jobs
          .heartbeat(row.id, this.owner, now(), this.leaseUntil())
          .then((held) => {
            if (!held) lease.abort(new Error('the job lease was lost'));
          })
          .catch((error: unknown) => log.warn({ err: error }, 'could not renew the job lease'));
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
    try {
      log.info('job started');
      await handler.run(job);
      if (await this.jobs.finish(row.id, this.owner, 'succeeded', null, now())) log.info('job succeeded');
      else
        log.warn('job finished after its lease was lost; the worker that took it over decides its outcome');
    } catch (error) {
      if (lease.signal.aborted) {
        log.warn({ err: error }, 'job abandoned: its lease was lost');
      } else if (!isPermanent(error) && row.attempts < row.max_attempts) {
        const retryAt = toStoredTime(new Date(this.clock().getTime() + 2 ** row.attempts * 1000));
        log.warn({ err: error }, 'job failed; it will be tried again');
        await this.jobs.retryLater(row.id, this.owner, reasonOf(error), retryAt, now());
      } else {
        log.warn({ err: error }, 'job failed');
        await handler.fail(job, reasonOf(error));
        await this.jobs.finish(row.id, this.owner, 'failed', reasonOf(error), now());
      }
    } finally {
      clearInterval(heartbeat);
    }
  }
}

export function defaultNodeName(): string {
  return os.hostname();
}
