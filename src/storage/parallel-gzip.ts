/**
 * gzip compression on every core, for a stream of bytes (a backup's tar).
 *
 * The input is cut into blocks of a fixed size, and each block is compressed on its own into a
 * complete gzip member (header, deflate data, CRC-32 and length). The members are written in
 * input order, one after the other: a file of concatenated members is one valid gzip stream
 * (RFC 1952, 2.2), which gzip, GNU tar, pigz and Node's gunzip read as the concatenation of their
 * contents. Each block starts with an empty dictionary, which costs a few bytes per block.
 *
 * The compression itself runs on libuv's thread pool (zlib's asynchronous calls), so several
 * blocks are compressed at once while the calling thread only copies bytes and keeps the order.
 * Memory is bounded: at most `concurrency` blocks are being compressed, one more is being
 * filled, and no input is read while the oldest block's output waits for the consumer.
 */
import { availableParallelism } from 'node:os';
import { gzip, type ZlibOptions } from 'node:zlib';

export const GZIP_BLOCK_BYTES = 1024 * 1024;

/**
 * Blocks compressed at once. libuv's pool has 4 threads (UV_THREADPOOL_SIZE) and also serves the
 * file reads of the walk that feeds us: one thread is left for them, so a read never waits
 * behind the compression it is needed for.
 */
export const GZIP_CONCURRENCY = Math.max(1, Math.min(availableParallelism(), 3));

export interface ParallelGzipOptions {
  /** Uncompressed bytes per gzip member (default 1 MiB). */
  blockBytes?: number;
  /** Blocks compressed at the same time (default: the cores, at most 3). */
  concurrency?: number;
  /** zlib level (default 6, gzip's own default). */
  level?: number;
}

/**
 * A pipeline stage: takes uncompressed chunks, yields the gzip members in order. Aborting the
 * pipeline stops it; blocks already handed to zlib finish on the pool and are dropped.
 */
export function parallelGzip(
  options: ParallelGzipOptions = {},
): (source: AsyncIterable<Buffer> | Iterable<Buffer>) => AsyncGenerator<Buffer> {
  const blockBytes = options.blockBytes ?? GZIP_BLOCK_BYTES;
  const concurrency = options.concurrency ?? GZIP_CONCURRENCY;
  const zlibOptions: ZlibOptions = { level: options.level ?? 6 };
  if (!Number.isSafeInteger(blockBytes) || blockBytes < 1)
    throw new Error(`invalid block size ${blockBytes}`);
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new Error(`invalid concurrency ${concurrency}`);

  return async function* compressMembers(source) {
    // Each block's input buffer is reused once its member is out: no 1 MiB allocation per block.
    const spare: Buffer[] = [];
    const inFlight: { input: Buffer; member: Promise<Buffer> }[] = [];
    const start = (input: Buffer, length: number): void => {
      const member = compressMember(input.subarray(0, length), zlibOptions);
      member.catch(() => {}); // awaited in order below; not an unhandled rejection meanwhile
      inFlight.push({ input, member });
    };
    const oldest = async (): Promise<Buffer> => {
      const { input, member } = inFlight.shift()!;
      const compressed = await member;
      spare.push(input);
      return compressed;
    };
    let block: Buffer = Buffer.allocUnsafe(blockBytes);
    let filled = 0;
    for await (const chunk of source) {
      for (let offset = 0; offset < chunk.length;) {
        const taken = chunk.copy(block, filled, offset, Math.min(chunk.length, offset + blockBytes - filled));
        filled += taken;
        offset += taken;
        if (filled < blockBytes) continue;
        if (inFlight.length >= concurrency) yield await oldest();
        start(block, filled);
        block = spare.pop() ?? Buffer.allocUnsafe(blockBytes);
        filled = 0;
      }
    }
    // The last, partial block; for no input at all, one empty member (gzip needs at least one).
    if (filled > 0 || inFlight.length === 0) start(block, filled);
    while (inFlight.length > 0) yield await oldest();
  };
}

function compressMember(data: Buffer, options: ZlibOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    gzip(data, options, (err, member) => (err ? reject(err) : resolve(member))),
  );
}
