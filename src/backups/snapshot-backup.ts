import { runInThread } from '../shared/thread.ts';
import type { Progress } from '../storage/archive/archive.types.ts';
import type { RepositoryLocation } from '../storage/repository/repository-location.ts';
import type { SnapshotResult } from '../storage/repository/snapshot-writer.ts';

export interface SnapshotVolumeInput {
  volume: string;
  repository: RepositoryLocation;
  backupId: string;
  parent: string | null;
  full: boolean;
  /** Patterns (gitignore rules) of paths to leave out. */
  ignored: readonly string[];
  reportProgress: boolean;
  progressIntervalMs?: number;
}

export interface SnapshotVolumeOptions {
  /** The server's last successful snapshot backup, whose unchanged files are not read again. */
  parent: string | null;
  /** Read every file, even those the parent says are unchanged. */
  full?: boolean;
  ignored?: readonly string[];
  onProgress?: (progress: Progress) => void;
  progressIntervalMs?: number;
  /** Stops the snapshot at once: the thread ends; what it stored is garbage for prune. */
  signal?: AbortSignal;
}

/**
 * Takes a snapshot of a volume into a repository, as backup `backupId`. The walk, the pattern
 * matching, the chunking and the hashing run in a worker thread (compression on libuv's pool
 * beside it): the event loop that answers requests is never held up.
 */
export function snapshotVolume(
  volume: string,
  repository: RepositoryLocation,
  backupId: string,
  options: SnapshotVolumeOptions,
): Promise<SnapshotResult> {
  const input: SnapshotVolumeInput = {
    volume,
    repository,
    backupId,
    parent: options.parent,
    full: options.full === true,
    ignored: options.ignored ?? [],
    reportProgress: options.onProgress !== undefined,
    ...(options.progressIntervalMs === undefined ? {} : { progressIntervalMs: options.progressIntervalMs }),
  };
  return runInThread<SnapshotResult, Progress>(import.meta.url, './snapshot-backup.thread', input, {
    ...(options.onProgress ? { onMessage: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    // Chunks pass through this thread's heap on their way to compression: a small young
    // generation frees them every few chunks rather than every few dozen MB.
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
  });
}
