/** Thread entry for BlobVerifier: decompresses and hashes each blob it is sent, and sends it back. */
import { parentPort } from 'node:worker_threads';
import zlib from 'node:zlib';
import { BlobDecoder } from './blob-compressor.ts';
import type { BlobFault, VerifyMessage } from './blob-verifier.ts';
import { blobId } from './repository.ts';

const decoder = BlobDecoder.create();

/** The blob's content, at the start of `output` when compressed; throws when it will not decompress. */
function contentOf(message: VerifyMessage): Uint8Array {
  const stored = new Uint8Array(message.input, 0, message.length);
  if (!message.compressed) return stored;
  const into = new Uint8Array(message.output!, 0, message.raw);
  if (decoder !== null) return decoder.decodeInto(stored, into);
  const content = zlib.zstdDecompressSync(stored, { maxOutputLength: Math.max(message.raw, 1) });
  if (content.length !== message.raw) throw new Error('its content is not the size the index gives');
  into.set(content);
  return into;
}

function faultOf(message: VerifyMessage): BlobFault | null {
  let content: Uint8Array;
  try {
    content = contentOf(message);
  } catch {
    return 'corrupt';
  }
  return content.length === message.raw && blobId(content) === message.blob ? null : 'mismatch';
}

parentPort!.on('message', (message: VerifyMessage) => {
  const reply: VerifyMessage = { ...message, fault: faultOf(message) };
  parentPort!.postMessage(reply, message.output === null ? [message.input] : [message.input, message.output]);
});
