/** Thread entry for BlobCompressor: compresses each blob it is sent, in place, and sends it back. */
import { parentPort } from 'node:worker_threads';
import { CHUNK_SIZES } from './chunker.ts';
import { BlobEncoder } from './blob-compressor.ts';

const encoder = new BlobEncoder(CHUNK_SIZES.max);

parentPort!.on('message', (request: { id: number; slab: ArrayBuffer; length: number }) => {
  const content = Buffer.from(request.slab, 0, request.length);
  const { stored, compressed } = encoder.encode(content);
  // The compressed form, smaller than the content, is written over it in the same buffer.
  if (compressed) stored.copy(content);
  parentPort!.postMessage({ id: request.id, slab: request.slab, length: stored.length, compressed }, [
    request.slab,
  ]);
});
