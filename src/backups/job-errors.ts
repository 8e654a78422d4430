/**
 * What the job queue is told of a failure met while a backup is made or restored. The queue knows
 * only PermanentJobError, UnreachableJobError and a lost database connection (jobs/job-failure.ts);
 * the errors of the archive, the stores and the volumes become those here:
 *
 * - permanent: a damaged or missing archive, a disk limit, a refused request (ArchiveError,
 *   AppError), a file that cannot be moved across a mount point.
 * - unreachable: the backup store could not be reached, or answered that it is failing for now
 *   (storage/stores/store-unreachable.ts).
 * - anything else is left as it is: tried again a few times.
 */
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import {
  PermanentJobError,
  UnreachableJobError,
  classifyFailure as classifyJobFailure,
  errorCode,
  type JobFailure,
} from '../jobs/job-failure.ts';
import type { JobHandler } from '../jobs/job-handler.ts';
import { AppError, translatingErrors } from '../shared/errors.ts';
import { ArchiveError } from '../storage/archive/archive.types.ts';
import { storeUnreachable } from '../storage/stores/store-unreachable.ts';

/**
 * Filesystem errors no later try can mend. EXDEV and EBUSY come from a rename or a link across a
 * mount point (which a restore avoids for a volume that is one: restore-files.ts); retried, each
 * try would download and extract the whole archive again only to fail the same way.
 */
const UNMOVABLE = new Set(['EXDEV', 'EBUSY']);

/** `error` as the queue is to be told of it (see above). */
export function toJobError(error: unknown): unknown {
  if (error instanceof PermanentJobError || error instanceof UnreachableJobError) return error;
  if (error instanceof ArchiveError || error instanceof AppError)
    return new PermanentJobError(error.message, { cause: error });
  const store = storeUnreachable(error);
  if (store !== null) return new UnreachableJobError('store', store, { cause: error });
  // The queue knows a lost database connection by itself.
  if (isDatabaseUnavailable(error)) return error;
  const code = errorCode(error);
  if (code !== null && UNMOVABLE.has(code))
    return new PermanentJobError(
      `files could not be moved (${code}): a mount point inside the server's volume is in the way`,
      { cause: error },
    );
  return error;
}

/** Runs a job's work, its failures turned into what the queue is to be told (`toJobError`). */
export function tellingTheQueue<T>(work: () => Promise<T>): Promise<T> {
  return translatingErrors(work, toJobError);
}

/** `handler`, whose failures are turned into what the queue is to be told (`toJobError`). */
export function withJobErrors<P>(handler: JobHandler<P>): JobHandler<P> {
  return {
    ...(handler.payload === undefined ? {} : { payload: handler.payload }),
    run: (job) => tellingTheQueue(() => handler.run(job)),
    fail: (job, reason) => handler.fail(job, reason),
  };
}

/** How the queue takes a failure met while a backup is made or restored. */
export function classifyFailure(error: unknown): JobFailure {
  return classifyJobFailure(toJobError(error));
}
