/**
 * Compression of new blobs, in a thread of its own beside the one that walks and chunks: a
 * snapshot keeps both cores busy, one reading, cutting and hashing, the other compressing. Each
 * blob's memory is moved to the compressing thread and the result moved back (transferred, not
 * copied). Compression is zstd, skipped for content that samples say will not shrink (already
 * compressed data: worlds, archives) and kept only where it saves something.
 */
import type { Worker } from 'node:worker_threads';
import zlib from 'node:zlib';
import { startThread, threadEntry } from '../../shared/thread.ts';
import { looksIncompressible } from '../archive/compressibility.ts';

/** zstd level 3: on the bench logs, 3× the ratio of deflate level 1, at twice its speed. */
const ZSTD_LEVEL = 3;

/** What a blob became: its stored bytes, and whether they are compressed. */
export interface Encoded {
  stored: Buffer;
  compressed: boolean;
}

/** zstd's output comes in pieces of this size: small allocations the C allocator reuses at once. */
const OUTPUT_PIECE = 64 * 1024;

/**
 * The stored form of `content`: zstd when it saves bytes. The size is told to zstd up front (it
 * then sizes its window and tables to the blob: a 4 KiB blob does not pay for a 2 MiB window).
 */
export function encodeBlob(content: Buffer): Encoded {
  if (content.length < 64 || looksIncompressible(content)) return { stored: content, compressed: false };
  const smaller = zlib.zstdCompressSync(content, {
    chunkSize: Math.min(OUTPUT_PIECE, Math.max(content.length, 1024)),
    pledgedSrcSize: content.length,
    params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL },
  });
  return smaller.length < content.length
    ? { stored: smaller, compressed: true }
    : { stored: content, compressed: false };
}

/**
 * A blob on its way to or from the compressing thread: held in `slab`, a buffer of its own that
 * moves between the threads (transferred, never copied) and is used again for the next blob.
 * The thread writes the compressed form over the content when it is the smaller.
 */
interface Slab {
  id: number;
  slab: ArrayBuffer;
  length: number;
  compressed: boolean;
}

/** A thread that compresses blobs sent to it, one at a time, in order. */
export class BlobCompressor {
  private readonly thread: Worker;
  private readonly waiting = new Map<number, { resolve: (slab: Slab) => void; reject: (e: Error) => void }>();
  private next = 0;
  private failure: Error | null = null;

  constructor() {
    this.thread = startThread(threadEntry(import.meta.url, './blob-compressor.thread'), null, {
      maxYoungGenerationSizeMb: 4,
    });
    this.thread.on('message', (reply: Slab) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      waiter?.resolve(reply);
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    this.thread.on('error', fail);
    this.thread.on('exit', () => fail(new Error('the compression thread ended')));
  }

  /**
   * Compresses the first `length` bytes of `slab`, which moves to the thread meanwhile; resolves
   * with it back, holding the stored form in its first `length` bytes.
   */
  encode(
    slab: ArrayBuffer,
    length: number,
  ): Promise<{ slab: ArrayBuffer; length: number; compressed: boolean }> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.next++;
    return new Promise<Slab>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const request: Slab = { id, slab, length, compressed: false };
      this.thread.postMessage(request, [slab]);
    });
  }

  async close(): Promise<void> {
    this.thread.removeAllListeners('exit');
    await this.thread.terminate();
  }
}

/**
 * Buffers of one size, used again and again: the C allocator keeps memory it was given back
 * rather than return it to the system, so a snapshot that allocated a buffer per chunk (hundreds
 * of MB of them) grew its resident memory by much of that.
 */
export class BufferPool {
  private readonly free: ArrayBuffer[] = [];

  constructor(readonly size: number) {}

  take(): ArrayBuffer {
    return this.free.pop() ?? new ArrayBuffer(this.size);
  }

  give(buffer: ArrayBuffer): void {
    if (buffer.byteLength === this.size) this.free.push(buffer);
  }
}
