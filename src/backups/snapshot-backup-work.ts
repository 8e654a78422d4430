/** The work of the `snapshotVolume` thread (see snapshot-backup.thread.ts): walks, chunks and stores a volume. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import type { Progress } from '../storage/archive/archive.types.ts';
import { closeUntakenBlobCompressor } from '../storage/repository/blob-compressor.ts';
import { openRepositoryStore } from '../storage/repository/repository-location.ts';
import { Repository } from '../storage/repository/repository.ts';
import { takeSnapshot, type SnapshotResult } from '../storage/repository/snapshot-writer.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { SnapshotVolumeInput } from './snapshot-backup.ts';
import { ignoreMatcher } from './ignore-patterns.ts';

const input = workerData as SnapshotVolumeInput;
runThreadWork<SnapshotResult, Progress>(async (signal, post) => {
  const store = await openRepositoryStore(input.repository);
  try {
    // The only sockets this thread opens are the store's: a network failure here is the store's.
    const repository = await fromStore(() => Repository.open(store));
    return await fromStore(() =>
      takeSnapshot(input.volume, repository, {
        backupId: input.backupId,
        parent: input.parent,
        full: input.full,
        exclude: ignoreMatcher(input.ignored),
        signal,
        ...(input.reportProgress ? { onProgress: post } : {}),
        ...(input.progressIntervalMs === undefined ? {} : { progressIntervalMs: input.progressIntervalMs }),
      }),
    );
  } finally {
    await store.close();
    await closeUntakenBlobCompressor(); // else this thread would not end
  }
});
