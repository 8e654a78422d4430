/** What a handler may say of a job it ran: how many bytes it wrote (a backup) or read (a restore). */
export interface JobResult {
  bytes?: number;
}

/**
 * How an attempt at a job ended: `succeeded`; `failed` for good; `retried` (failed, to be tried
 * again later); `abandoned` when the worker lost its lease or stopped before the end.
 */
export type JobOutcome = 'succeeded' | 'failed' | 'retried' | 'abandoned';

export interface JobAttemptEnd {
  kind: string;
  outcome: JobOutcome;
  durationMs: number;
  /** What the handler reported, when it succeeded and said. */
  bytes: number | null;
}

/** Told of every attempt at a job that a worker ends (metrics count them). Must not throw. */
export interface JobObserver {
  jobEnded(end: JobAttemptEnd): void;
}
