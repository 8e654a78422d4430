/** Thread entry for `archiveVolume`: walks, filters and compresses a volume off the main thread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import type { Progress } from '../storage/archive.types.ts';
import { createArchive } from '../storage/create-archive.ts';
import type { ArchiveVolumeInput } from './archive-volume.ts';
import { ignoreMatcher } from './ignore-patterns.ts';

const input = workerData as ArchiveVolumeInput;
runThreadWork<Awaited<ReturnType<typeof createArchive>>, Progress>((signal, post) =>
  createArchive(
    input.volume,
    input.output,
    input.reportProgress ? post : undefined,
    ignoreMatcher(input.ignored),
    {},
    signal,
  ),
);
