/** Thread entry for BlobCompressor: compresses each blob it is sent, in place, and sends it back. */
import { parentPort } from 'node:worker_threads';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { encodeBlob } from './blob-compressor.ts';

parentPort!.on('message', (request: { id: number; slab: ArrayBuffer; length: number }) => {
  const content = Buffer.from(request.slab, 0, request.length);
  const { stored, compressed } = encodeBlob(content);
  // The compressed form, smaller than the content, is written over it in the same buffer.
  if (compressed) stored.copy(content);
  parentPort!.postMessage({ id: request.id, slab: request.slab, length: stored.length, compressed }, [
    request.slab,
  ]);
  // zlib's output is garbage at once: freed now, not after 32 MB more of it.
  if (compressed) collectGarbage('young');
});
