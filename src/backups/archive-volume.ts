import { rm } from 'node:fs/promises';
import { runInThread } from '../shared/thread.ts';
import type { Progress } from '../storage/archive.types.ts';
import type { ArchiveSummary } from '../storage/create-archive.ts';

export interface ArchiveVolumeInput {
  volume: string;
  output: string;
  /** Patterns (gitignore rules) of paths to leave out. */
  ignored: readonly string[];
  reportProgress: boolean;
}

export interface ArchiveVolumeOptions {
  ignored?: readonly string[];
  onProgress?: (progress: Progress) => void;
  /** Stops the archive at once: the thread ends and the half-written file is removed. */
  signal?: AbortSignal;
}

/**
 * Writes a volume into a .tar.gz at `output`, leaving out what `ignored` names. The walk, the
 * pattern matching and the compression run in a worker thread: however large the volume or
 * however costly the patterns, the event loop that answers requests is never held up.
 */
export function archiveVolume(
  volume: string,
  output: string,
  options: ArchiveVolumeOptions = {},
): Promise<ArchiveSummary> {
  const input: ArchiveVolumeInput = {
    volume,
    output,
    ignored: options.ignored ?? [],
    reportProgress: options.onProgress !== undefined,
  };
  return runInThread<ArchiveSummary, Progress>(import.meta.url, './archive-volume.thread', input, {
    ...(options.onProgress ? { onMessage: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    // A thread ended mid-write leaves its partial file: createArchive writes `<output>.partial`.
    cleanUp: () => rm(`${output}.partial`, { force: true }),
  });
}
