/**
 * gzip compression on every core, for a stream of bytes (a backup's tar).
 *
 * The input is cut into blocks of a fixed size, and each block is compressed on its own into a
 * complete gzip member (header, deflate data, CRC-32 and length). The members are written in
 * input order, one after the other: a file of concatenated members is one valid gzip stream
 * (RFC 1952, 2.2), which gzip, GNU tar, pigz and Node's gunzip read as the concatenation of their
 * contents. Each block starts with an empty dictionary, which costs a few bytes per block.
 *
 * The compression runs in worker threads of its own, one per core, each at background priority
 * (thread-priority.ts): the blocks are compressed at once on every core, while the thread that
 * answers HTTP is still scheduled first. The calling thread only copies bytes and keeps the
 * order. Memory is bounded: at most two blocks per thread are handed out, one more is being
 * filled, and no input is read while the oldest block's output waits for the consumer. A block's
 * buffer carries its input to a thread and its member back, and is filled again once the
 * consumer releases the member: a whole archive is made with a handful of buffers, and nothing
 * is left for the garbage collector to find late (its memory would stay with the process).
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { answersRequests } from '../../shared/request-thread.ts';
import { startThread, threadEntry } from '../../shared/thread.ts';
import { compressBlock, gzipMemberBound, type GzipBlock, type GzipMember } from './gzip-member.ts';

export const GZIP_BLOCK_BYTES = 1024 * 1024;

/** Compression threads: one per core. */
export const GZIP_CONCURRENCY = Math.max(1, availableParallelism());

/**
 * A compression thread's JavaScript heap: it holds a block reference and a reply at a time (the
 * bytes themselves live outside the heap, and zlib's output is collected after each block).
 */
const COMPRESSION_THREAD_LIMITS = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 };

/** Blocks handed to each thread at once: the next one is there when a thread finishes one. */
const BLOCKS_PER_THREAD = 2;

export interface ParallelGzipOptions {
  /** Uncompressed bytes per gzip member (default 1 MiB). */
  blockBytes?: number;
  /** Compression threads (default: one per core). */
  concurrency?: number;
  /** zlib level (default 6, gzip's own default). */
  level?: number;
  /**
   * One of the `concurrency` compressors is the calling thread itself, between the blocks it
   * fills: for a worker thread whose own work is light (a download's: reading and copying), which
   * would otherwise wait on the others. A thread fewer, and its memory. Never a thread that
   * answers requests.
   */
  compressHere?: boolean;
}

/**
 * The pipeline stage; when its threads have all ended (at once if it never started); and
 * `release`, which hands a member's memory back once the consumer is done with it.
 */
export type ParallelGzip = ((
  source: AsyncIterable<Buffer> | Iterable<Buffer>,
  pipelineOptions?: { signal?: AbortSignal },
) => AsyncGenerator<Buffer>) & {
  threadsEnded(): Promise<unknown>;
  /**
   * Says that `member`, yielded by this stage, has been written (or copied) and is no longer
   * needed: its buffer is filled with a later block instead of a new one being allocated. A
   * consumer that never releases gets a new buffer per block, left to the garbage collector.
   */
  release(member: Buffer): void;
  /** How many block buffers the stage has allocated so far. */
  buffersAllocated(): number;
};

/**
 * A pipeline stage: takes uncompressed chunks, yields the gzip members in order. Aborting the
 * pipeline stops it; the threads finish the block in hand and end.
 */
export function parallelGzip(options: ParallelGzipOptions = {}): ParallelGzip {
  const blockBytes = options.blockBytes ?? GZIP_BLOCK_BYTES;
  const concurrency = options.concurrency ?? GZIP_CONCURRENCY;
  const level = options.level ?? 6;
  const compressHere = options.compressHere === true;
  if (compressHere && answersRequests()) throw new Error('a thread that answers requests does not compress');
  if (!Number.isSafeInteger(blockBytes) || blockBytes < 1)
    throw new Error(`invalid block size ${blockBytes}`);
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new Error(`invalid concurrency ${concurrency}`);

  // Each block's buffer holds its input, then its member, and is filled again once released.
  const bufferBytes = gzipMemberBound(blockBytes);
  const ours = new WeakSet<ArrayBuffer>();
  const spare: ArrayBuffer[] = [];
  const release = (member: Buffer): void => {
    const buffer = member.buffer as ArrayBuffer;
    if (ours.has(buffer) && !spare.includes(buffer)) spare.push(buffer);
  };
  let allocated = 0;
  const nextBuffer = (): ArrayBuffer => {
    const reused = spare.pop();
    if (reused !== undefined) return reused;
    allocated += 1;
    return new ArrayBuffer(bufferBytes);
  };

  let threadsEnded: Promise<unknown> = Promise.resolve();
  async function* compressMembers(
    source: AsyncIterable<Buffer> | Iterable<Buffer>,
    pipelineOptions?: { signal?: AbortSignal },
  ): AsyncGenerator<Buffer> {
    const threads: Compressor[] = Array.from(
      { length: compressHere ? concurrency - 1 : concurrency },
      () => new CompressionThread(level),
    );
    if (compressHere) threads.push(new CompressionHere(level));
    threadsEnded = Promise.all(threads.map((thread) => thread.ended));
    // A pipeline that fails elsewhere may never resume this generator: its signal ends the
    // threads then.
    const closeAll = () => Promise.all(threads.map((thread) => thread.close()));
    pipelineOptions?.signal?.addEventListener('abort', () => void closeAll(), { once: true });
    const inFlight: Promise<GzipMember>[] = [];
    let next = 0;
    const start = (buffer: ArrayBuffer, length: number): void => {
      const thread = threads[next % threads.length]!;
      next += 1;
      const member = thread.compress({ buffer, length });
      member.catch(() => {}); // awaited in order below; not an unhandled rejection meanwhile
      inFlight.push(member);
    };
    const oldest = async (): Promise<Buffer> => {
      const { buffer, length } = await inFlight.shift()!;
      ours.add(buffer); // the transferred buffer arrives as a new object
      return Buffer.from(buffer, 0, length);
    };
    try {
      let block = nextBuffer();
      let view = Buffer.from(block);
      let filled = 0;
      // Each chunk is copied before the next is asked for: a source may reuse its chunks' memory.
      for await (const chunk of source) {
        for (let offset = 0; offset < chunk.length;) {
          const taken = chunk.copy(
            view,
            filled,
            offset,
            Math.min(chunk.length, offset + blockBytes - filled),
          );
          filled += taken;
          offset += taken;
          if (filled < blockBytes) continue;
          if (inFlight.length >= concurrency * BLOCKS_PER_THREAD) yield await oldest();
          start(block, filled);
          block = nextBuffer();
          view = Buffer.from(block);
          filled = 0;
        }
      }
      // The last, partial block; for no input at all, one empty member (gzip needs at least one).
      if (filled > 0 || inFlight.length === 0) start(block, filled);
      while (inFlight.length > 0) yield await oldest();
    } finally {
      await closeAll();
    }
  }
  return Object.assign(compressMembers, {
    threadsEnded: () => threadsEnded,
    release,
    buffersAllocated: () => allocated,
  });
}

/** What compresses blocks, each answered in the order it was sent. */
interface Compressor {
  readonly ended: Promise<void>;
  compress(block: GzipBlock): Promise<GzipMember>;
  close(): Promise<void>;
}

/**
 * The calling thread as a compressor: a block is compressed when the caller next waits (a
 * microtask later), so that it first hands the other compressors their blocks.
 */
class CompressionHere implements Compressor {
  readonly ended = Promise.resolve();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly level: number) {}

  compress(block: GzipBlock): Promise<GzipMember> {
    const member = this.queue.then(() => compressBlock(block, this.level));
    this.queue = member.catch(() => undefined);
    return member;
  }

  close(): Promise<void> {
    return this.queue.then(() => undefined);
  }
}

/** One compression thread, answering its blocks in the order they were sent. */
class CompressionThread implements Compressor {
  private readonly worker: Worker;
  private readonly waiting: { resolve(member: GzipMember): void; reject(error: Error): void }[] = [];
  private failure: Error | undefined;
  /** Resolves once the thread has ended. */
  readonly ended: Promise<void>;

  constructor(level: number) {
    this.worker = startThread(
      threadEntry(import.meta.url, './gzip-member.thread'),
      { level },
      COMPRESSION_THREAD_LIMITS,
    );
    this.worker.on('message', (member: GzipMember) => this.waiting.shift()?.resolve(member));
    this.worker.on('error', (error) => this.fail(error));
    this.ended = new Promise((resolve) =>
      this.worker.once('exit', () => {
        this.fail(new Error('a compression thread ended early'));
        resolve();
      }),
    );
  }

  compress(block: GzipBlock): Promise<GzipMember> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.worker.postMessage(block, [block.buffer]);
    });
  }

  /** Lets the thread end once it has answered what it was sent; resolves when it has. */
  close(): Promise<void> {
    this.worker.postMessage('close');
    return this.ended;
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiting.splice(0)) waiter.reject(error);
  }
}
