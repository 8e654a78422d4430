/** Thread entry for catalogInThread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import { lowerThreadPriority } from '../shared/thread-priority.ts';
import { catalogArchive } from '../storage/catalog/archive-catalog.ts';
import type { CatalogSummary } from '../storage/catalog/backup-catalog.ts';
import { catalogSnapshot } from '../storage/catalog/snapshot-catalog.ts';
import { ArchiveError } from '../storage/archive/archive.types.ts';
import { openSnapshot } from '../storage/repository/open-snapshot.ts';
import { DamagedRepository } from '../storage/repository/tree.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { CatalogWorkInput } from './backup-catalog-work.ts';

const { source, backup, target } = workerData as CatalogWorkInput;
lowerThreadPriority();
runThreadWork<CatalogSummary>(async (signal) => {
  if ('repository' in source) {
    const { store, repository, record } = await openSnapshot(source.repository, backup.id, backup.sha256);
    try {
      return await fromStore(() => catalogSnapshot(repository, record.tree, target, backup, signal));
    } catch (error) {
      // A tree that is not what Aerie wrote: said as a restore of it would say it.
      if (error instanceof DamagedRepository)
        throw new ArchiveError('corrupt', `the backup's stored data is damaged: ${error.message}`);
      throw error;
    } finally {
      await store.close();
    }
  }
  // The S3 client is loaded only for an archive in S3 (see stage-restore.thread.ts).
  const { withArchiveStream } = await import('../storage/stores/s3-object.ts');
  return fromStore(() =>
    withArchiveStream(source.archive, (stream) => catalogArchive(stream, target, backup, signal)),
  );
});
