/** Thread entry for `archiveVolume`: walks, filters and compresses a volume off the main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { finishThread } from '../shared/thread.ts';
import { createArchive } from '../storage/create-archive.ts';
import type { ArchiveVolumeInput } from './archive-volume.ts';
import { ignoreMatcher } from './ignore-patterns.ts';

const input = workerData as ArchiveVolumeInput;
const port = parentPort!;
finishThread(
  (message) => port.postMessage(message),
  createArchive(
    input.volume,
    input.output,
    input.reportProgress ? (progress) => port.postMessage(progress) : undefined,
    ignoreMatcher(input.ignored),
  ),
);
