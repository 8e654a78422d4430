/** Thread entry for pruneInThread and checkInThread. */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../shared/thread.ts';
import { lowerThreadPriority } from '../shared/thread-priority.ts';
import { checkRepository, type CheckProgress, type CheckReport } from '../storage/repository/check.ts';
import { prune, type PruneProgress, type PruneReport } from '../storage/repository/prune.ts';
import { openRepositoryStore } from '../storage/repository/repository-location.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import type { RepositoryWorkInput } from './repository-work.ts';

const input = workerData as RepositoryWorkInput;
lowerThreadPriority();
runThreadWork<PruneReport | CheckReport, PruneProgress | CheckProgress>(async (_signal, post) => {
  const store = await openRepositoryStore(input.repository);
  try {
    if (input.op === 'prune') return await fromStore(() => prune(store, { onProgress: post }));
    return await fromStore(() => checkRepository(store, { readData: input.readData, onProgress: post }));
  } finally {
    await store.close();
  }
});
