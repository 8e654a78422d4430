import { PROGRESS_INTERVAL_MS, type Progress } from '../storage/archive.types.ts';

/**
 * How often the thread doing a job's work reports: every 250 ms, or as often as progress is
 * written when that is more often (tests), so that each write has fresh counts.
 */
export function threadProgressInterval(writeIntervalMs: number): number {
  return Math.min(PROGRESS_INTERVAL_MS, writeIntervalMs);
}

/** A thread's report as a job's progress counts it: bytes of the archive, and files. */
export function toCounts(progress: Progress): { bytes?: number; files: number } {
  return {
    files: progress.files,
    ...(progress.archiveBytes === undefined ? {} : { bytes: progress.archiveBytes }),
  };
}
