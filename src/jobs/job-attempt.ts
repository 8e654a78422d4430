/**
 * One attempt at a claimed job: its handler runs while the attempt keeps the job's lease alive,
 * and is stopped when the lease is lost, when the attempt runs out of time, or when the worker
 * stops; how long the attempt took, and how it ended, is told to the observer.
 */
import type { Logger } from 'pino';
import type { JobContext, JobHandler } from './job-handler.ts';
import type { JobObserver, JobOutcome, JobResult } from './job-observer.ts';
import type { JobRow } from './job.table.ts';

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

export interface JobAttemptDeps {
  /** Renews the job's lease; false when this worker no longer holds the job. */
  renewLease: () => Promise<boolean>;
  observer?: JobObserver;
  log: Logger;
}

export class JobAttempt {
  readonly job: JobContext<unknown>;
  private readonly stop = new AbortController();
  private readonly startedAt = performance.now();
  /** The handler's run, once started. */
  private running: Promise<void | JobResult> | undefined;

  constructor(
    private readonly row: JobRow,
    payload: unknown,
    private readonly deps: JobAttemptDeps,
  ) {
    this.job = {
      id: row.id,
      payload,
      batch: row.batch,
      attempt: row.attempts,
      signal: this.stop.signal,
      renewLease: async () => {
        const held = await deps.renewLease();
        if (!held) this.interrupt('lease-lost');
        return held;
      },
    };
  }

  /** Stops the handler (its signal aborts); the first reason given is the one that counts. */
  interrupt(why: JobInterrupted['why']): void {
    if (!this.stop.signal.aborted) this.stop.abort(new JobInterrupted(why));
  }

  /**
   * Renews the lease every third of it, and stops the attempt once `timeoutMs` have passed, until
   * the function returned is called.
   */
  watch(leaseMs: number, timeoutMs: number): () => void {
    const heartbeat = setInterval(
      () => {
        this.job
          .renewLease()
          .catch((error: unknown) => this.deps.log.warn({ err: error }, 'could not renew the job lease'));
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    const deadline = setTimeout(() => this.interrupt('timeout'), timeoutMs);
    return () => {
      clearInterval(heartbeat);
      clearTimeout(deadline);
    };
  }

  /**
   * Runs the handler. Rejects as soon as the attempt is interrupted: a handler should stop when
   * its signal aborts, and one that does not is left behind.
   */
  run(handler: JobHandler<unknown>): Promise<void | JobResult> {
    this.running = handler.run(this.job);
    return Promise.race([this.running, whenAborted(this.stop.signal)]);
  }

  /**
   * Why the attempt was stopped from outside, if it was; an interrupted handler is first given a
   * moment to clean up (remove what it was writing).
   */
  async interruption(): Promise<JobInterrupted | undefined> {
    const cause: unknown = this.stop.signal.aborted ? this.stop.signal.reason : undefined;
    if (!(cause instanceof JobInterrupted)) return undefined;
    await settledWithin(this.running, CLEAN_UP_GRACE_MS);
    return cause;
  }

  /** Tells the observer how the attempt ended; its duration (and bytes), for the log line. */
  ended(outcome: JobOutcome, bytes: number | null = null): { durationMs: number; bytes?: number } {
    const durationMs = Math.round(performance.now() - this.startedAt);
    try {
      this.deps.observer?.jobEnded({ kind: this.row.kind, outcome, durationMs, bytes });
    } catch (error) {
      this.deps.log.warn({ err: error }, 'the job observer failed');
    }
    return { durationMs, ...(bytes === null ? {} : { bytes }) };
  }
}

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
