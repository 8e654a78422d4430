/** Thread entry for `extractBackup`: reads a backup and writes its files, off the main thread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import { ArchiveError, type ExtractReport, type Progress } from '../storage/archive/archive.types.ts';
import { extractArchive } from '../storage/archive/extract.ts';
import { openRepositoryStore } from '../storage/repository/repository-location.ts';
import { RepositoryMissing } from '../storage/repository/repository-store.ts';
import { Repository } from '../storage/repository/repository.ts';
import { extractSnapshot } from '../storage/repository/snapshot-restore.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { ExtractBackupInput } from './backup-extract.ts';

const input = workerData as ExtractBackupInput;
runThreadWork<ExtractReport, Progress>(async (signal, post) => {
  const limits = { maxBytes: null, signal };
  const onProgress = input.reportProgress ? post : undefined;
  const { source, directory } = input;
  if (typeof source === 'string') return extractArchive(source, directory, limits, onProgress);
  if (!('repository' in source)) {
    const { withArchiveStream } = await import('../storage/stores/s3-object.ts');
    return fromStore(() =>
      withArchiveStream(source, (stream) => extractArchive(stream, directory, limits, onProgress)),
    );
  }
  const store = await openRepositoryStore(source.repository);
  try {
    const repository = await fromStore(() => Repository.open(store));
    const { record } = await fromStore(() => repository.loadSnapshot(source.backupId)).catch(
      (error: unknown) => {
        if (error instanceof RepositoryMissing)
          throw new ArchiveError('not-found', 'the snapshot of this backup is missing from storage');
        throw error;
      },
    );
    return await fromStore(() => extractSnapshot(repository, record.tree, directory, limits, onProgress));
  } finally {
    await store.close();
  }
});
