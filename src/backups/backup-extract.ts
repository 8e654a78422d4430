import { mkdir, readdir } from 'node:fs/promises';
import { runInThread } from '../shared/thread.ts';
import { ArchiveError, type ExtractReport, type Progress } from '../storage/archive/archive.types.ts';
import type { ArchiveLocation } from '../storage/stores/backup-storage.ts';
import type { SnapshotSource } from '../storage/volumes/stage-restore.ts';

export interface ExtractBackupInput {
  directory: string;
  source: ArchiveLocation | SnapshotSource;
  reportProgress: boolean;
}

/**
 * Writes a backup's files into `directory`, which must be empty or not exist yet (it is made):
 * an archive is read as a restore reads it, a snapshot chunk by chunk, every chunk checked.
 * Paths, kinds and sizes are judged as a restore judges them; nothing is written outside the
 * directory. Runs in a worker thread.
 */
export async function extractBackup(
  directory: string,
  source: ArchiveLocation | SnapshotSource,
  onProgress?: (p: Progress) => void,
): Promise<ExtractReport> {
  await mkdir(directory, { recursive: true, mode: 0o750 });
  if ((await readdir(directory)).length > 0) {
    throw new ArchiveError('conflict', `${directory} is not empty: extract into an empty or new directory`);
  }
  const input: ExtractBackupInput = { directory, source, reportProgress: onProgress !== undefined };
  return runInThread<ExtractReport, Progress>(import.meta.url, './backup-extract.thread', input, {
    ...(onProgress ? { onMessage: onProgress } : {}),
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
}
