/**
 * Compression of new blobs, in a thread of its own beside the one that walks and chunks: a
 * snapshot keeps both cores busy, one reading, cutting and hashing, the other compressing. Each
 * blob's memory is moved to the compressing thread and the result moved back (transferred, not
 * copied). Compression is zstd, skipped for content that samples say will not shrink (already
 * compressed data: worlds, archives) and kept only where it saves something.
 */
import type { Worker } from 'node:worker_threads';
import { constants as zc, zstdCompressSync } from 'node:zlib';
import { startThread, threadEntry } from '../../shared/thread.ts';
import { looksIncompressible } from '../archive/compressibility.ts';

/** zstd level 3: on the bench logs, 3× the ratio of deflate level 1, at twice its speed. */
const ZSTD_LEVEL = 3;

/** What a blob became: its stored bytes, and whether they are compressed. */
export interface Encoded {
  stored: Buffer;
  compressed: boolean;
}

/**
 * The stored form of `content`: zstd when it saves bytes. The size is told to zstd up front
 * (it then sizes its window and tables to the blob: a 4 KiB blob does not pay for a 2 MiB
 * window), and the output buffer is as large as the input.
 */
export function encodeBlob(content: Buffer): Encoded {
  if (content.length < 64 || looksIncompressible(content)) return { stored: content, compressed: false };
  const smaller = zstdCompressSync(content, {
    chunkSize: Math.max(content.length, 1024),
    pledgedSrcSize: content.length,
    params: { [zc.ZSTD_c_compressionLevel]: ZSTD_LEVEL },
  });
  return smaller.length < content.length
    ? { stored: smaller, compressed: true }
    : { stored: content, compressed: false };
}

interface Request {
  id: number;
  content: Uint8Array;
}

interface Reply {
  id: number;
  stored: Uint8Array;
  compressed: boolean;
}

/** A thread that compresses blobs sent to it, one at a time, in order. */
export class BlobCompressor {
  private readonly thread: Worker;
  private readonly waiting = new Map<number, { resolve: (e: Encoded) => void; reject: (e: Error) => void }>();
  private next = 0;
  private failure: Error | null = null;

  constructor() {
    this.thread = startThread(threadEntry(import.meta.url, './blob-compressor.thread'), null, {
      maxYoungGenerationSizeMb: 8,
    });
    this.thread.on('message', (reply: Reply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      const stored = Buffer.from(reply.stored.buffer, reply.stored.byteOffset, reply.stored.byteLength);
      waiter?.resolve({ stored, compressed: reply.compressed });
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
   * Compresses `content`, which this call takes over: its memory moves to the thread (it must be
   * a buffer of its own, not a view of a pool or of a buffer still in use).
   */
  encode(content: Buffer): Promise<Encoded> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.next++;
    return new Promise<Encoded>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const request: Request = { id, content };
      this.thread.postMessage(request, [content.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.thread.removeAllListeners('exit');
    await this.thread.terminate();
  }
}

/** A buffer of its own (transferable) holding a copy of `content`. */
export function ownCopy(content: Uint8Array): Buffer {
  const copy = Buffer.allocUnsafeSlow(content.length);
  copy.set(content);
  return copy;
}
