/**
 * When a job whose try failed is tried again. One that could not reach the backup store or the
 * database: after 2 s, then twice as long each time up to 60 s, for as long as the retry window
 * (AERIE_JOB_RETRY_MINUTES) lasts from its first such failure; each wait is drawn between half
 * and all of its nominal length, so that the workers that lost the store at one moment do not all
 * come back at one moment. Such tries do not count against the job's attempts. Any other failure
 * that may pass: up to `max_attempts` tries, after 2 s, then 4 s, 8 s…; a permanent one: never.
 * The worker writes a job's outcome again, with the same waits and window, while the database
 * cannot be reached.
 */
import { retryingReason, unreachableReason, type JobFailure } from './job-failure.ts';
import type { JobRow } from './job.table.ts';

export interface RetryPolicyOptions {
  /** How long, from a job's first try that could not reach something, it keeps trying; 0: never. */
  windowMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
  /** A number in [0, 1): Math.random, or a fixed one in tests. */
  random: () => number;
}

export const DEFAULT_RETRY_WINDOW_MS = 15 * 60_000;

/** What becomes of a job whose try failed: tried again at `atMs`, or failed for good. */
export type AfterFailure =
  | { retry: true; atMs: number; reason: string; unreachableSinceMs?: number }
  | { retry: false; reason: string };

/** The counts of a job that decide whether and when it is tried again. */
export type JobTries = Pick<JobRow, 'attempts' | 'max_attempts' | 'unreachable_retries' | 'unreachable_at'>;

export class RetryPolicy implements RetryPolicyOptions {
  readonly windowMs: number;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
  readonly random: () => number;

  constructor(overrides: Partial<RetryPolicyOptions> = {}) {
    this.windowMs = overrides.windowMs ?? DEFAULT_RETRY_WINDOW_MS;
    this.firstDelayMs = overrides.firstDelayMs ?? 2000;
    this.maxDelayMs = overrides.maxDelayMs ?? 60_000;
    this.random = overrides.random ?? Math.random;
  }

  /** The wait after the `failures`-th failure in a row (0 for the first): nominal, then jittered. */
  backoffMs(failures: number): number {
    const nominal = Math.min(this.maxDelayMs, this.firstDelayMs * 2 ** Math.min(failures, 30));
    return Math.round(nominal / 2 + (nominal / 2) * this.random());
  }

  /**
   * When to try again a job whose tries have failed to reach something since `sinceMs`, `failures`
   * of them before this one; null once the window has run out. The last try falls at the window's
   * end, not past it.
   */
  nextTryAt(sinceMs: number, nowMs: number, failures: number): number | null {
    const end = sinceMs + this.windowMs;
    if (nowMs >= end) return null;
    return Math.min(nowMs + this.backoffMs(failures), end);
  }

  /**
   * The fate of `job`'s failed try, `nowMs`: when it is tried again and the reason it shows
   * meanwhile (with, for an unreachable store or database, when the first such try failed), or the
   * reason it fails with.
   */
  afterFailure(job: JobTries, failure: JobFailure, nowMs: number): AfterFailure {
    if (failure.kind === 'unreachable') {
      const since = job.unreachable_at === null ? nowMs : Date.parse(job.unreachable_at);
      const atMs = this.nextTryAt(since, nowMs, job.unreachable_retries);
      if (atMs === null)
        return { retry: false, reason: unreachableReason(failure.what, failure.cause, nowMs - since) };
      return {
        retry: true,
        atMs,
        reason: retryingReason(failure.what, failure.cause),
        unreachableSinceMs: since,
      };
    }
    const tries = this.tries(job);
    if (failure.kind === 'permanent' || tries >= job.max_attempts)
      return { retry: false, reason: failure.reason };
    return { retry: true, atMs: nowMs + 2 ** tries * 1000, reason: failure.reason };
  }

  /**
   * The reason a job just claimed is given up with, without running it: it was claimed more often
   * than its attempts allow (its earlier workers died, or lost it, before its end). Null while it
   * may run.
   */
  givenUp(job: JobTries): string | null {
    if (this.tries(job) <= job.max_attempts) return null;
    return `gave up after ${job.max_attempts} attempts that did not finish`;
  }

  /**
   * How long to wait before writing a job's outcome again, after `failures` failed writes in a row
   * (0 for the first), the first of them `elapsedMs` ago; null once the window has run out.
   */
  writeAgainInMs(failures: number, elapsedMs: number): number | null {
    if (elapsedMs >= this.windowMs) return null;
    return this.backoffMs(failures);
  }

  /** Tries that could not reach the store or the database are not attempts. */
  private tries(job: JobTries): number {
    return job.attempts - job.unreachable_retries;
  }
}

export function retryPolicy(overrides: Partial<RetryPolicyOptions> = {}): RetryPolicy {
  return new RetryPolicy(overrides);
}

/** The policy itself, or one with these overrides of the defaults. */
export function asRetryPolicy(policy: RetryPolicy | Partial<RetryPolicyOptions> = {}): RetryPolicy {
  return policy instanceof RetryPolicy ? policy : new RetryPolicy(policy);
}

/** See RetryPolicy.backoffMs. */
export function backoffMs(policy: RetryPolicy, failures: number): number {
  return policy.backoffMs(failures);
}

/** See RetryPolicy.nextTryAt. */
export function nextTryAt(
  policy: RetryPolicy,
  sinceMs: number,
  nowMs: number,
  failures: number,
): number | null {
  return policy.nextTryAt(sinceMs, nowMs, failures);
}

/** See RetryPolicy.afterFailure. */
export function afterFailure(
  policy: RetryPolicy,
  job: JobTries,
  failure: JobFailure,
  nowMs: number,
): AfterFailure {
  return policy.afterFailure(job, failure, nowMs);
}
