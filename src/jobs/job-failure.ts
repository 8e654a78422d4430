/**
 * What a job's failure says about trying again, and what the user is told about it:
 *
 * - permanent: another try cannot mend it; the job fails at once. A handler says so by throwing a
 *   PermanentJobError, whose reason the user is shown.
 * - unreachable: something the job needs (the backup store, the database) could not be reached, or
 *   answered that it is failing for now. The job is tried again, with growing waits, for as long
 *   as the retry window allows (retry-policy.ts), and its tries then do not count against its
 *   attempts. A handler says so by throwing an UnreachableJobError; a lost or refused database
 *   connection is recognised as it is.
 * - other: anything else (a bug, a lost lease before a swap); tried again a few times.
 *
 * The queue knows no more than this: each job kind's handler turns the failures of what it uses
 * into these errors.
 */
import { isDatabaseUnavailable } from '../db/unavailable.ts';

export type Unreachable = 'store' | 'database';

export type JobFailure =
  | { kind: 'permanent'; reason: string }
  | { kind: 'unreachable'; what: Unreachable; cause: string }
  | { kind: 'other'; reason: string };

const NAMES: Record<Unreachable, string> = { store: 'the backup store', database: 'the database' };

/** A failure no later try can mend: the job fails at once, with `reason` (shown to the user). */
export class PermanentJobError extends Error {
  constructor(
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(reason, options);
    this.name = 'PermanentJobError';
  }
}

/**
 * `what` could not be reached, for `why` (an error code, `SlowDown, HTTP 503`): the job is tried
 * again later, for as long as the retry window lasts.
 */
export class UnreachableJobError extends Error {
  constructor(
    readonly what: Unreachable,
    readonly why: string,
    options?: ErrorOptions,
  ) {
    super(`${NAMES[what]} could not be reached (${why})`, options);
    this.name = 'UnreachableJobError';
  }
}

const INTERNAL = 'an internal error occurred; the server log has the details';

export function classifyFailure(error: unknown): JobFailure {
  if (error instanceof PermanentJobError) return { kind: 'permanent', reason: error.reason };
  if (error instanceof UnreachableJobError)
    return { kind: 'unreachable', what: error.what, cause: error.why };
  if (isDatabaseUnavailable(error))
    return { kind: 'unreachable', what: 'database', cause: errorCode(error) ?? 'connection lost' };
  return { kind: 'other', reason: INTERNAL };
}

/** The reason a job waiting to be tried again shows. */
export function retryingReason(what: Unreachable, cause: string): string {
  return `${NAMES[what]} could not be reached (${cause}); the job will be tried again`;
}

/** The reason a job gives when it stops trying, `forMs` after the first try that could not reach it. */
export function unreachableReason(what: Unreachable, cause: string, forMs: number): string {
  if (forMs < 1000) return `${NAMES[what]} could not be reached (${cause})`;
  return `${NAMES[what]} was unreachable for ${duration(forMs)} (${cause})`;
}

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `${Math.round(seconds / 60)} minutes`;
}

/** The first error code along the error's causes. */
export function errorCode(error: unknown, depth = 0): string | null {
  if (!(error instanceof Error) || depth > 3) return null;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (typeof code === 'string' || typeof code === 'number') return String(code);
  return errorCode(cause, depth + 1);
}
