/**
 * Thread entry for the S3 store's inventory and removals (`backup reconcile`): the S3 client is
 * loaded here, in a thread that ends with the work, so a worker process that reconciles every
 * hour never keeps the client (about 20 MB) in its main thread.
 */
import { workerData } from 'node:worker_threads';
import { runThreadWork } from '../../shared/thread.ts';
import type { S3InventoryInput } from './s3-backup-storage.ts';

const input = workerData as S3InventoryInput;
runThreadWork(async () => {
  const { listStored, removeStored } = await import('./s3-object.ts');
  return input.op === 'list' ? listStored(input.s3) : removeStored(input.s3, input.entries);
});
