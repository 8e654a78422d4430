/**
 * When a job whose try failed is tried again. One that could not reach the backup store or the
 * database: after 2 s, then twice as long each time up to 60 s, for as long as the retry window
 * (AERIE_JOB_RETRY_MINUTES) lasts from its first such failure; each wait is drawn between half
 * and all of its nominal length, so that the workers that lost the store at one moment do not all
 * come back at one moment. Such tries do not count against the job's attempts. Any other failure
 * that may pass: up to `max_attempts` tries, after 2 s, then 4 s, 8 s…; a permanent one: never.
 */
import { retryingReason, unreachableReason, type JobFailure } from './job-failure.ts';
import type { JobRow } from './job.table.ts';

export interface RetryPolicy {
  /** How long, from a job's first try that could not reach something, it keeps trying; 0: never. */
  windowMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
  /** A number in [0, 1): Math.random, or a fixed one in tests. */
  random: () => number;
}

export const DEFAULT_RETRY_WINDOW_MS = 15 * 60_000;

export function retryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  return {
    windowMs: DEFAULT_RETRY_WINDOW_MS,
    firstDelayMs: 2000,
    maxDelayMs: 60_000,
    random: Math.random,
    ...overrides,
  };
}

/** The wait after the `failures`-th failure in a row (0 for the first): nominal, then jittered. */
export function backoffMs(policy: RetryPolicy, failures: number): number {
  const nominal = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(failures, 30));
  return Math.round(nominal / 2 + (nominal / 2) * policy.random());
}

/**
 * When to try again a job whose tries have failed to reach something since `sinceMs`, `failures`
 * of them before this one; null once the window has run out. The last try falls at the window's
 * end, not past it.
 */
export function nextTryAt(
  policy: RetryPolicy,
  sinceMs: number,
  nowMs: number,
  failures: number,
): number | null {
  const end = sinceMs + policy.windowMs;
  if (nowMs >= end) return null;
  return Math.min(nowMs + backoffMs(policy, failures), end);
}

/** What becomes of a job whose try failed: tried again at `atMs`, or failed for good. */
export type AfterFailure =
  | { retry: true; atMs: number; reason: string; unreachableSinceMs?: number }
  | { retry: false; reason: string };

/**
 * The fate of `job`'s failed try, `nowMs`: when it is tried again and the reason it shows
 * meanwhile (with, for an unreachable store or database, when the first such try failed), or the
 * reason it fails with.
 */
export function afterFailure(
  policy: RetryPolicy,
  job: Pick<JobRow, 'attempts' | 'max_attempts' | 'unreachable_retries' | 'unreachable_at'>,
  failure: JobFailure,
  nowMs: number,
): AfterFailure {
  if (failure.kind === 'unreachable') {
    const since = job.unreachable_at === null ? nowMs : Date.parse(job.unreachable_at);
    const atMs = nextTryAt(policy, since, nowMs, job.unreachable_retries);
    if (atMs === null)
      return { retry: false, reason: unreachableReason(failure.what, failure.cause, nowMs - since) };
    return {
      retry: true,
      atMs,
      reason: retryingReason(failure.what, failure.cause),
      unreachableSinceMs: since,
    };
  }
  const tries = job.attempts - job.unreachable_retries;
  if (failure.kind === 'permanent' || tries >= job.max_attempts)
    return { retry: false, reason: failure.reason };
  return { retry: true, atMs: nowMs + 2 ** tries * 1000, reason: failure.reason };
}
