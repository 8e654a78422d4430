import { rm } from 'node:fs/promises';
import { runInThread } from '../shared/thread.ts';
import type { Progress } from '../storage/archive/archive.types.ts';
import type { ArchiveTarget } from '../storage/stores/backup-storage.ts';
import type { ArchiveSummary } from '../storage/archive/archive-writer.ts';

export interface ArchiveVolumeInput {
  volume: string;
  output: ArchiveTarget;
  /** Patterns (gitignore rules) of paths to leave out. */
  ignored: readonly string[];
  reportProgress: boolean;
  progressIntervalMs?: number;
}

export interface ArchiveVolumeOptions {
  ignored?: readonly string[];
  /**
   * Files and bytes so far (archive bytes too), at most every `progressIntervalMs` (250 ms), once
   * more with the totals; with `phase: 'uploading'` when an S3 upload, all bytes written, is
   * finishing.
   */
  onProgress?: (progress: Progress) => void;
  progressIntervalMs?: number;
  /** Stops the archive at once: the thread ends and the half-written file is removed. */
  signal?: AbortSignal;
}

/**
 * Writes a volume into a .tar.gz at `output` (a file path, or an S3 object uploaded in parts as
 * it is written), leaving out what `ignored` names. The walk, the pattern matching, the
 * compression and the upload run in a worker thread: however large the volume or however costly
 * the patterns, the event loop that answers requests is never held up.
 */
export function archiveVolume(
  volume: string,
  output: string | ArchiveTarget,
  options: ArchiveVolumeOptions = {},
): Promise<ArchiveSummary> {
  const target: ArchiveTarget = typeof output === 'string' ? { kind: 'file', path: output } : output;
  const input: ArchiveVolumeInput = {
    volume,
    output: target,
    ignored: options.ignored ?? [],
    reportProgress: options.onProgress !== undefined,
    ...(options.progressIntervalMs === undefined ? {} : { progressIntervalMs: options.progressIntervalMs }),
  };
  return runInThread<ArchiveSummary, Progress>(import.meta.url, './backup-archive.thread', input, {
    ...(options.onProgress ? { onMessage: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    // Each gzip member passes through this thread's heap; a small young generation lets the
    // collector free them (they are held outside the heap) every few members, not every 64 MB.
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
    // A thread ended mid-write leaves its partial file: createArchive writes `<output>.partial`.
    // An upload is aborted by the thread itself when the archive fails or is stopped.
    cleanUp: async () => {
      if (target.kind === 'file') await rm(`${target.path}.partial`, { force: true });
    },
  });
}
