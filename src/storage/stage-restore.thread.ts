/** Thread entry for `stageRestoreInThread`: extracts and merges a restore off the main thread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import type { ExtractReport, Progress } from './archive.types.ts';
import { stageRestore } from './restore-files.ts';
import type { StageRestoreInput } from './stage-restore.ts';

const input = workerData as StageRestoreInput;
runThreadWork<ExtractReport, Progress>((signal, post) =>
  stageRestore(
    input.paths,
    input.archivePath,
    { truncate: input.truncate, maxBytes: input.maxBytes, signal },
    input.reportProgress ? post : undefined,
  ),
);
