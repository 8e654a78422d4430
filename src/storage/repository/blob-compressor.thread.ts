/** Thread entry for BlobCompressor: compresses each blob it is sent and sends it back. */
import { parentPort } from 'node:worker_threads';
import { encodeBlob, ownCopy } from './blob-compressor.ts';

parentPort!.on('message', (request: { id: number; content: Uint8Array }) => {
  const content = Buffer.from(request.content.buffer, request.content.byteOffset, request.content.byteLength);
  const { stored, compressed } = encodeBlob(content);
  // The result is sent back by transfer, so it must be a buffer of its own: the content kept as
  // it is was moved here whole; zlib's output is a slice of a larger buffer, and is copied.
  const own = stored.buffer === request.content.buffer;
  const reply = own ? stored : ownCopy(stored);
  parentPort!.postMessage({ id: request.id, stored: reply, compressed }, [reply.buffer as ArrayBuffer]);
});
