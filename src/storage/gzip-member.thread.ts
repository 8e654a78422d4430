/**
 * Thread entry for `parallelGzip`: compresses each block it is sent into one gzip member (stored
 * as it is when it looks incompressible: compressibility.ts), at background priority, and sends the member back with the block's buffer (both transferred, so
 * nothing is copied across the boundary). A `close` message lets the thread end.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { gzipSync } from 'node:zlib';
import { lowerThreadPriority } from '../shared/thread-priority.ts';
import { looksIncompressible } from './compressibility.ts';
import type { GzipBlock, GzipMember } from './parallel-gzip.ts';

const port = parentPort;
if (port === null) throw new Error('gzip-member.thread runs in a worker thread');
const { level } = workerData as { level: number };
lowerThreadPriority();

port.on('message', (message: GzipBlock | 'close') => {
  if (message === 'close') {
    port.close();
    return;
  }
  const input = new Uint8Array(message.input, 0, message.length);
  // One output chunk big enough for any member of the block, so the member is that chunk's own
  // memory and moves to the caller whole: nothing is copied, and nothing is left here for the
  // garbage collector to find later (zlib's usual 16 KiB chunks would each be).
  const compressed = gzipSync(input, {
    level: looksIncompressible(input) ? 0 : level,
    chunkSize: memberBound(message.length),
  });
  const reply: GzipMember = {
    input: message.input,
    member: compressed.buffer,
    offset: compressed.byteOffset,
    length: compressed.length,
  };
  port.postMessage(reply, [message.input, reply.member]);
});

/** The most a gzip member of `bytes` bytes can take: deflate's worst case, the header and trailer. */
function memberBound(bytes: number): number {
  return Math.max(64 * 1024, bytes + (bytes >> 12) + (bytes >> 14) + 1024);
}
