/** Thread entry for `stageRestoreInThread`: extracts and merges a restore off the main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { finishThread } from '../shared/thread.ts';
import { stageRestore } from './restore-files.ts';
import type { StageRestoreInput } from './stage-restore.ts';

const input = workerData as StageRestoreInput;
const port = parentPort!;
finishThread(
  (message) => port.postMessage(message),
  stageRestore(
    input.paths,
    input.archivePath,
    { truncate: input.truncate, maxBytes: input.maxBytes },
    input.reportProgress ? (progress) => port.postMessage(progress) : undefined,
  ),
);
