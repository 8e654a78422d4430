/** What a handler may say of a job it ran: how many bytes it wrote (a backup) or read (a restore). */
export interface JobResult {
  bytes?: number;
  /**
   * Work left for after the job's outcome is recorded (deleting the tree a restore replaced), so
   * that what the user waits for does not wait for it. The worker runs it once the job is marked
   * succeeded and before it claims another job; a failure there is logged and changes nothing.
   */
  afterwards?: () => Promise<void>;
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
