/**
 * Contract between the archive code (read, verify, extract, create) and the restore job.
 * Every failure that a user should read about is an ArchiveError with a stable `reason`.
 */
import { reviveThreadError, type ThreadError } from '../../shared/thread.ts';

export type ArchiveFailure =
  | 'not-found' // the archive file does not exist
  | 'checksum-mismatch' // its SHA-256 differs from the backup record
  | 'corrupt' // not a tar compressed once with gzip, or its gzip or tar data is damaged or truncated
  | 'unsafe-path' // an entry path has a `..` component or is otherwise unusable
  | 'disk-limit' // extracting would exceed the server's disk limit or the free space
  | 'conflict' // the archive contradicts itself (e.g. `a` is a file and `a/b` an entry)
  | 'name-too-long' // a path or a path component is longer than the filesystem allows
  | 'nested-mount'; // another filesystem is mounted inside the volume (see mount-point.ts)

export class ArchiveError extends Error {
  constructor(
    readonly reason: ArchiveFailure,
    message: string,
    readonly entry?: string,
  ) {
    super(message);
    this.name = 'ArchiveError';
  }
}

/** An error a worker thread failed with, made again: an ArchiveError keeps its reason and entry. */
export function reviveArchiveError(error: ThreadError): Error {
  if (error.name !== 'ArchiveError') return reviveThreadError(error);
  const { reason, entry } = error.fields;
  return new ArchiveError(
    reason as ArchiveFailure,
    error.message,
    typeof entry === 'string' ? entry : undefined,
  );
}

/** An entry that was deliberately not created, and why (reported, never silently dropped). */
export interface SkippedEntry {
  path: string;
  kind: 'symlink' | 'hardlink' | 'character-device' | 'block-device' | 'fifo' | 'socket' | 'other';
  reason: string;
}

export interface ExtractReport {
  files: number;
  directories: number;
  /** Bytes of regular-file content written. */
  bytes: number;
  skipped: SkippedEntry[];
  /** SHA-256 (hex) of the archive file, taken while it was read. */
  archiveSha256?: string;
  /** How many more entries were skipped beyond those listed in `skipped` (absent when none). */
  skippedOmitted?: number;
  /**
   * A snapshot restored for a restore job: the id of the tree of what was written (restored-tree.ts),
   * stored in the repository (not yet named by anything), for the job to record once swapped in.
   */
  restoredTree?: string;
}

/** How many entries were skipped in all: those listed plus those only counted. */
export function skippedTotal(report: Pick<ExtractReport, 'skipped' | 'skippedOmitted'>): number {
  return report.skipped.length + (report.skippedOmitted ?? 0);
}

const SHOWN_PATH_CHARS = 100;

/**
 * An entry path as a message or the activity log shows it: its first 100 characters, then '…'.
 * A path may be 4 KiB long (or, in a hostile archive, far longer); a reason must stay readable.
 */
export function shownPath(entryPath: string): string {
  // 100 code points take at most 200 UTF-16 units: cutting at 202 never splits one of them.
  const head = Array.from(entryPath.slice(0, 2 * SHOWN_PATH_CHARS + 2))
    .slice(0, SHOWN_PATH_CHARS)
    .join('');
  return head.length === entryPath.length ? entryPath : `${head}…`;
}

export interface ExtractLimits {
  /** Most bytes the extracted tree may take (file content plus 4 KiB per entry); null = no limit of its own. */
  maxBytes: number | null;
  /** Aborts the extraction: it stops at once and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The least time between two progress reports (250 ms unless set). */
  progressIntervalMs?: number;
  /**
   * A partial restore: only the entries this accepts are written (each by its path, as
   * checkEntryPath returns it); the others are skipped unread where the source allows.
   */
  only?: (rel: string) => boolean;
}

/** How often archive work reports its progress, unless told otherwise. */
export const PROGRESS_INTERVAL_MS = 250;

/**
 * How far archive work has got: files and bytes of file content so far. Archiving and
 * extraction add the bytes of the archive itself (written so far, read so far), and a step of
 * the work that starts says so in `phase` (an upload finishing, a merge).
 */
export interface Progress {
  files: number;
  bytes: number;
  archiveBytes?: number;
  phase?: string;
}
