/** Thread entry for `archiveVolume`: walks, filters and compresses a volume off the main thread. */
import { workerData } from 'node:worker_threads';
import { collectGarbage } from '../shared/collect-garbage.ts';
import { runThreadWork } from '../shared/thread.ts';
import { lowerThreadPriority } from '../shared/thread-priority.ts';
import type { Progress } from '../storage/archive/archive.types.ts';
import { createArchive, type ArchiveSink } from '../storage/archive/archive-writer.ts';
import { markFromStore } from '../storage/stores/store-unreachable.ts';
import type { ArchiveVolumeInput } from './backup-archive.ts';
import { ignoreMatcher } from './ignore-patterns.ts';

const input = workerData as ArchiveVolumeInput;
lowerThreadPriority(); // the walk and the tar: background work, behind the thread answering HTTP
runThreadWork<Awaited<ReturnType<typeof createArchive>>, Progress>(async (signal, post) => {
  const { output } = input;
  // An S3 target is uploaded from this thread, part by part, as the archive is compressed. The S3
  // client is loaded only then (about 80 ms of CPU and 20 MB that a local backup does without).
  let last: Progress = { files: 0, bytes: 0 };
  const report = input.reportProgress ? (progress: Progress) => post((last = progress)) : undefined;
  // A part's buffers live through several young collections while it uploads, and V8 would free
  // them only 64 MB later: once a part is stored, this thread's whole heap (a few MB) is collected.
  let sink: string | ArchiveSink;
  if (output.kind === 'file') sink = output.path;
  else {
    const s3 = await import('../storage/stores/s3-object.ts');
    // Before its own upload begins, any an earlier attempt at this archive left open (its process
    // killed mid-way) is aborted, so that its parts do not stay in the bucket.
    await s3.abortEarlierUploads(output.upload);
    sink = finishing(
      s3.s3UploadSink(output.upload, () => collectGarbage('all')),
      () => report?.({ ...last, phase: 'uploading' }),
    );
  }
  try {
    return await createArchive(
      input.volume,
      sink,
      report,
      ignoreMatcher(input.ignored),
      {},
      signal,
      input.progressIntervalMs,
    );
  } catch (error) {
    if (typeof sink === 'string') throw error;
    await sink.discard(); // also when the volume could not be opened
    // This thread's only sockets are the upload's: a network failure is the store's.
    throw markFromStore(error);
  }
});

/** `sink`, calling `starting` when it is asked to finish (for an upload: its last parts and completion). */
function finishing(sink: ArchiveSink, starting: () => void): ArchiveSink {
  return {
    ...sink,
    finish: () => {
      starting();
      return sink.finish();
    },
  };
}
