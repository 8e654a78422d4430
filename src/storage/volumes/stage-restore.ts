/**
 * stageRestore (restore-files.ts) run in a worker thread: the gunzip, the tar parsing and checks,
 * the writes and the walk of the live volume keep their CPU work off the event loop that answers
 * HTTP, however large the archive.
 */
import { runInThread } from '../../shared/thread.ts';
import { reviveArchiveError, type ExtractReport, type Progress } from '../archive/archive.types.ts';
import type { ArchiveSlice } from '../catalog/archive-pieces.ts';
import type { ArchiveLocation } from '../stores/backup-storage.ts';
import type { RepositoryLocation } from '../repository/repository-location.ts';
import { discardStaging, type RestorePaths, type StageOptions } from './restore-files.ts';

/**
 * The thread's young generation, in MiB. Extraction streams every byte of the archive through
 * short-lived buffers; a small young generation collects them sooner. Measured on a 1.2 GiB
 * archive: peak RSS 224 MB with V8's default, 212 MB at 16, 197 MB at 8 (same time), 190 MB at 4
 * (25% more CPU).
 */
const YOUNG_GENERATION_MB = 8;

/** A backup kept as a snapshot: its repository, and the backup whose snapshot it is. */
export interface SnapshotSource {
  repository: RepositoryLocation;
  backupId: string;
  /** The backup's checksum (hex): the snapshot record must hash to it. */
  sha256: string | null;
  /** Store the tree of what was written (restored-tree.ts) and name it in the report. */
  keepRestoredTree?: boolean;
}

/**
 * Part of a .tar.gz backup: the pieces of its archive that hold what a partial restore writes
 * (BackupFiles.restoreSlices), each checked against its catalog as it is read.
 */
export interface ArchiveSlicesSource {
  archive: ArchiveLocation;
  slices: ArchiveSlice[];
  /** The backup's checksum: the catalog's pieces were noted from an archive that has it. */
  sha256: string | null;
}

export interface StageRestoreInput {
  paths: RestorePaths;
  /** A file path, or an S3 object the thread reads as a stream; or a snapshot; or pieces of an archive. */
  archive: ArchiveLocation | SnapshotSource | ArchiveSlicesSource;
  truncate: boolean;
  maxBytes: number | null;
  /** A partial restore's paths (RestoreSelection's). */
  only?: string[];
  reportProgress: boolean;
  progressIntervalMs?: number;
}

/**
 * Builds the restored tree in `paths.staging`, as stageRestore does, in a worker thread, telling
 * `onProgress` how far it has got (files and bytes written, archive bytes read; then the merge).
 * Aborting `options.signal` ends the thread at once; the staging tree and its report are then
 * removed before the promise rejects. An ArchiveError thrown in the thread is rethrown here as
 * one, with the same reason, message and entry. A snapshot's report gives as `archiveSha256` the
 * SHA-256 of its snapshot record (the backup's checksum).
 */
export function stageRestoreInThread(
  paths: RestorePaths,
  archive: StageRestoreInput['archive'],
  options: StageOptions,
  onProgress?: (p: Progress) => void,
): Promise<ExtractReport> {
  const input: StageRestoreInput = {
    paths,
    archive,
    truncate: options.truncate,
    maxBytes: options.maxBytes,
    ...(options.only === undefined ? {} : { only: options.only.paths }),
    reportProgress: onProgress !== undefined,
    ...(options.progressIntervalMs === undefined ? {} : { progressIntervalMs: options.progressIntervalMs }),
  };
  return runInThread<ExtractReport, Progress>(import.meta.url, './stage-restore.thread', input, {
    ...(onProgress ? { onMessage: onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    // stageRestore removes its own staging when it fails; not when its thread is ended mid-way.
    cleanUp: async (succeeded) => {
      if (!succeeded) await discardStaging(paths);
    },
    reviveError: reviveArchiveError,
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
}
