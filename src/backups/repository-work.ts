import { runInThread } from '../shared/thread.ts';
import type { CheckProgress, CheckReport } from '../storage/repository/check.ts';
import type { PruneProgress, PruneReport } from '../storage/repository/prune.ts';
import type { RepositoryLocation } from '../storage/repository/repository-location.ts';

export type RepositoryWorkInput =
  | { op: 'prune'; repository: RepositoryLocation }
  | { op: 'check'; repository: RepositoryLocation; readData: boolean };

/**
 * Prunes a repository in a worker thread: the walk of every snapshot's trees and the copying of
 * blobs never hold up the event loop of the process (which may be answering HTTP).
 */
export function pruneInThread(
  repository: RepositoryLocation,
  onProgress?: (progress: PruneProgress) => void,
): Promise<PruneReport> {
  const input: RepositoryWorkInput = { op: 'prune', repository };
  return runInThread<PruneReport, PruneProgress>(import.meta.url, './repository-work.thread', input, {
    ...(onProgress ? { onMessage: onProgress } : {}),
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
}

/** Checks a repository in a worker thread (with `readData`, every blob's hash). */
export function checkInThread(
  repository: RepositoryLocation,
  readData: boolean,
  onProgress?: (progress: CheckProgress) => void,
): Promise<CheckReport> {
  const input: RepositoryWorkInput = { op: 'check', repository, readData };
  return runInThread<CheckReport, CheckProgress>(import.meta.url, './repository-work.thread', input, {
    ...(onProgress ? { onMessage: onProgress } : {}),
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
}
