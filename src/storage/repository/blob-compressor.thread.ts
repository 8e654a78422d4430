/** Thread entry for BlobCompressor: compresses each blob it is sent, in place, and sends it back. */
import { parentPort } from 'node:worker_threads';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { encodeBlob } from './blob-compressor.ts';

/** zlib's output since the last collection: collected every few MB, not after each blob. */
let uncollected = 0;
const COLLECT_EVERY = 4 * 1024 * 1024;

parentPort!.on('message', (request: { id: number; slab: ArrayBuffer; length: number }) => {
  const content = Buffer.from(request.slab, 0, request.length);
  const { stored, compressed } = encodeBlob(content);
  // The compressed form, smaller than the content, is written over it in the same buffer.
  if (compressed) stored.copy(content);
  parentPort!.postMessage({ id: request.id, slab: request.slab, length: stored.length, compressed }, [
    request.slab,
  ]);
  // zlib's output is garbage at once: freed every 4 MB of it, not after V8's 32 MB (a
  // collection after every blob cost a fifth of the thread's time with 256 KiB chunks).
  if (compressed) uncollected += content.length;
  if (uncollected >= COLLECT_EVERY) {
    uncollected = 0;
    collectGarbage('young');
  }
});
