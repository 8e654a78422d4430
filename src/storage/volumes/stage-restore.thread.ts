/** Thread entry for `stageRestoreInThread`: extracts and merges a restore off the main thread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../../shared/thread.ts';
import { lowerThreadPriority } from '../../shared/thread-priority.ts';
import type { ExtractReport, Progress } from '../archive/archive.types.ts';
import { stageRestore, type StageOptions } from './restore-files.ts';
import { RestoreSelection } from './restore-selection.ts';
import type { ArchiveSlicesSource, StageRestoreInput } from './stage-restore.ts';
import { extractEntries, fromArchive } from '../archive/extract.ts';
import { readArchiveSlice } from '../stores/archive-slice.ts';
import { fromStore } from '../stores/store-unreachable.ts';
import { openSnapshot } from '../repository/open-snapshot.ts';
import { startBlobVerifier, type BlobWriter } from '../repository/repository.ts';
import { extractSnapshot } from '../repository/snapshot-restore.ts';
import { RestoredTree } from '../repository/restored-tree.ts';
import type { SnapshotSource } from './stage-restore.ts';

const input = workerData as StageRestoreInput;
// Background work: the thread answering HTTP (and the other servers' processes) go first.
lowerThreadPriority();
runThreadWork<ExtractReport, Progress>(async (signal, post) => {
  const options: StageOptions = {
    truncate: input.truncate,
    maxBytes: input.maxBytes,
    signal,
    ...(input.only === undefined ? {} : { only: new RestoreSelection(input.only) }),
    ...(input.progressIntervalMs === undefined ? {} : { progressIntervalMs: input.progressIntervalMs }),
  };
  const onProgress = input.reportProgress ? post : undefined;
  const { archive } = input;
  if (typeof archive === 'string') return stageRestore(input.paths, archive, options, onProgress);
  if ('repository' in archive) return stageSnapshot(input.paths, archive, options, onProgress);
  if ('slices' in archive) return stageSlices(input.paths, archive, options, onProgress);
  // An S3 archive is streamed from the store by this thread, hashed and extracted on one pass.
  // The S3 client is loaded only then: loading it costs a local restore's thread about 0.2 s of
  // CPU and 20 MB. The only sockets this thread opens are the store's: a network failure here is
  // the store's, and is marked so (to be retried while the store is away).
  const { withArchiveStream } = await import('../stores/s3-object.ts');
  return fromStore(() =>
    withArchiveStream(archive, (stream) => stageRestore(input.paths, stream, options, onProgress)),
  );
});

/**
 * Stages a partial restore of a .tar.gz backup from the pieces of its archive that hold the chosen
 * paths (archive-slice.ts): each piece checked against its catalog before it is inflated, so the
 * report names the backup's checksum as the one read (as a whole read proves it).
 */
async function stageSlices(
  paths: StageRestoreInput['paths'],
  source: ArchiveSlicesSource,
  options: StageOptions,
  onProgress: ((p: Progress) => void) | undefined,
): Promise<ExtractReport> {
  const report = await stageRestore(
    paths,
    (staging, limits, progress) =>
      extractEntries(
        async (onEntry, onRead) => {
          for (const slice of source.slices)
            await fromStore(() =>
              readArchiveSlice(source.archive, slice, (entry) => onEntry(fromArchive(entry)), {
                ...(limits.signal === undefined ? {} : { signal: limits.signal }),
                onRead,
              }),
            );
        },
        staging,
        limits,
        progress,
      ),
    options,
    onProgress,
  );
  return { ...report, archiveSha256: source.sha256 ?? undefined };
}

/**
 * Stages a restore from a snapshot: its record checked against the backup's checksum before
 * anything is written, then every chunk checked as it is read, several read at once. With
 * `keepRestoredTree`, the tree of what was written is stored too (its id in the report): failing
 * to store it fails nothing, the next snapshot then reads every file.
 */
async function stageSnapshot(
  paths: StageRestoreInput['paths'],
  source: SnapshotSource,
  options: StageOptions,
  onProgress: ((p: Progress) => void) | undefined,
): Promise<ExtractReport> {
  startBlobVerifier();
  const { store, repository, record } = await openSnapshot(source.repository, source.backupId, source.sha256);
  try {
    const writer = source.keepRestoredTree === true ? repository.writer() : null;
    const restored = writer === null ? undefined : new RestoredTree(writer);
    let report: ExtractReport;
    try {
      report = await stageRestore(
        paths,
        (staging, limits, progress) =>
          fromStore(() => extractSnapshot(repository, record.tree, staging, limits, progress, restored)),
        options,
        onProgress,
      );
    } catch (error) {
      await writer?.abandon();
      throw error;
    }
    const restoredTree = restored === undefined ? undefined : await storeRestoredTree(restored, writer!);
    return {
      ...report,
      archiveSha256: source.sha256 ?? undefined,
      ...(restoredTree === undefined ? {} : { restoredTree }),
    };
  } finally {
    await store.close();
  }
}

async function storeRestoredTree(restored: RestoredTree, writer: BlobWriter): Promise<string | undefined> {
  try {
    const tree = await restored.finish();
    await writer.finish();
    return tree;
  } catch {
    await writer.abandon();
    return undefined;
  }
}
