/**
 * Thread entry for `parallelGzip`: compresses each block it is sent into one gzip member (stored
 * as it is when it looks incompressible: compressibility.ts), at background priority. The member
 * is written over the block in the block's own buffer, which goes back to the caller (transferred,
 * so nothing is copied across the boundary, and the caller fills it again); zlib writes into one
 * output buffer kept for the next block (compressBlock). What little garbage a block leaves is
 * collected before the next: the thread's memory stays at about one block's worth, however long
 * the archive. A `close` message lets the thread end.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { lowerThreadPriority } from '../../shared/thread-priority.ts';
import { compressBlock, type GzipBlock } from './gzip-member.ts';

const port = parentPort;
if (port === null) throw new Error('gzip-member.thread runs in a worker thread');
const { level } = workerData as { level: number };
lowerThreadPriority();

port.on('message', (message: GzipBlock | 'close') => {
  if (message === 'close') {
    port.close();
    return;
  }
  port.postMessage(compressBlock(message, level), [message.buffer]);
  // The block's bookkeeping, now unreachable (compressBlock has returned).
  collectGarbage('young');
});
