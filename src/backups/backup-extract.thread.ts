/** Thread entry for `extractBackup`: reads a backup and writes its files, off the main thread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import type { ExtractReport, Progress } from '../storage/archive/archive.types.ts';
import { ENTRY_COST, extractArchive } from '../storage/archive/extract.ts';
import { openSnapshot } from '../storage/repository/open-snapshot.ts';
import { startBlobVerifier } from '../storage/repository/repository.ts';
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
  startBlobVerifier();
  const { store, repository, record } = await openSnapshot(source.repository, source.backupId, source.sha256);
  try {
    // The record matched the backup's checksum: its totals are the backup's own, and bound what
    // may be written (a hostile tree cannot fill the disk).
    const maxBytes = record.bytes + (record.files + record.directories) * ENTRY_COST;
    return await fromStore(() =>
      extractSnapshot(repository, record.tree, directory, { ...limits, maxBytes }, onProgress),
    );
  } finally {
    await store.close();
  }
});
