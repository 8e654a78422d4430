/**
 * What a job's failure says about trying again, and what the user is told about it:
 *
 * - permanent: another try cannot mend it (a damaged archive, a disk limit, a refused request, a
 *   file that cannot be moved across a mount point); the job fails at once.
 * - unreachable: the backup store or the database could not be reached, or answered that it is
 *   failing for now. The job is tried again, with growing waits, for as long as the retry window
 *   allows (retry-policy.ts), and its tries then do not count against its attempts.
 * - other: anything else (a bug, a lost lease before a swap); tried again a few times.
 */
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { AppError } from '../shared/errors.ts';
import { ArchiveError } from '../storage/archive/archive.types.ts';
import { storeUnreachable } from '../storage/stores/store-unreachable.ts';

export type Unreachable = 'store' | 'database';

export type JobFailure =
  | { kind: 'permanent'; reason: string }
  | { kind: 'unreachable'; what: Unreachable; cause: string }
  | { kind: 'other'; reason: string };

const INTERNAL = 'an internal error occurred; the server log has the details';

/**
 * Filesystem errors no later try can mend. EXDEV and EBUSY come from a rename or a link across a
 * mount point (which a restore avoids for a volume that is one: restore-files.ts); retried, each
 * try would download and extract the whole archive again only to fail the same way.
 */
const UNMOVABLE = new Set(['EXDEV', 'EBUSY']);

export function classifyFailure(error: unknown): JobFailure {
  if (error instanceof ArchiveError || error instanceof AppError)
    return { kind: 'permanent', reason: error.message };
  const store = storeUnreachable(error);
  if (store !== null) return { kind: 'unreachable', what: 'store', cause: store };
  if (isDatabaseUnavailable(error))
    return { kind: 'unreachable', what: 'database', cause: codeOf(error) ?? 'connection lost' };
  const code = codeOf(error);
  if (code !== null && UNMOVABLE.has(code))
    return {
      kind: 'permanent',
      reason: `files could not be moved (${code}): a mount point inside the server's volume is in the way`,
    };
  return { kind: 'other', reason: INTERNAL };
}

const NAMES: Record<Unreachable, string> = { store: 'the backup store', database: 'the database' };

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
function codeOf(error: unknown, depth = 0): string | null {
  if (!(error instanceof Error) || depth > 3) return null;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (typeof code === 'string' || typeof code === 'number') return String(code);
  return codeOf(cause, depth + 1);
}
