/**
 * Compression of new blobs, in a thread of its own beside the one that walks and chunks: a
 * snapshot keeps both cores busy, one reading, cutting and hashing, the other compressing. Each
 * blob's memory is moved to the compressing thread and the result moved back (transferred, not
 * copied). Compression is zstd, skipped for content that samples say will not shrink (already
 * compressed data: worlds, archives) and kept only where it saves something.
 */
import zlib from 'node:zlib';
import { collectGarbage } from '../../shared/collect-garbage.ts';
import { ServingThread, threadEntry } from '../../shared/thread.ts';
import { looksIncompressible } from '../archive/compressibility.ts';
import { nativeZlib, type ZlibHandle } from '../archive/zlib-handle.ts';

/**
 * zstd level 1. On the bench volume (326 MB: logs, and region files of compressed data with
 * padding), level 1 compresses in 0.69× level 3's time and stores 0.6% more (218.0 MB against
 * 216.1 MB); compression is the longest step of a first backup, so it sets that backup's time.
 */
const ZSTD_LEVEL = 1;

/**
 * The largest zstd frame of `bytes` bytes (zstd's ZSTD_compressBound, with room to spare): an
 * output buffer this large always holds the whole frame, so a frame always ends and the context
 * starts the next one with its parameters as they are (a reset would put zstd's default level back).
 */
function frameBound(bytes: number): number {
  return bytes + (bytes >> 7) + 1024;
}

/** What a blob became: its stored bytes, and whether they are compressed. */
export interface Encoded {
  stored: Buffer;
  compressed: boolean;
}

/** zstd output from the one-call API is collected (a whole-heap collection) every this much. */
const COLLECT_EVERY = 16 * 1024 * 1024;

/**
 * Compresses blobs one after another with one zstd context, into one output buffer: nothing is
 * allocated per blob. (`zlib.zstdCompressSync` sets up a context per call, about 0.2 ms for a
 * blob, and returns its output as new buffers, which a young collection does not free: a
 * snapshot's compressing thread grew by 60 MiB of them between whole-heap collections.) The
 * context is reached through the zlib object's native handle; a Node.js whose zlib does not hold
 * it that way gets the one-call API instead, its output collected every 16 MB.
 */
export class BlobEncoder {
  private handle: ZlibHandle | null = null;
  private state: Uint32Array | null = null;
  private readonly output: Buffer;
  private readonly maxBlob: number;
  private uncollected = 0;

  constructor(maxBlob: number, options: { oneCall?: boolean } = {}) {
    this.maxBlob = maxBlob;
    this.output = Buffer.allocUnsafe(frameBound(maxBlob));
    if (options.oneCall !== true) this.openContext();
  }

  private openContext(): void {
    const native = nativeZlib(
      zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } }),
    );
    this.handle = native?.handle ?? null;
    this.state = native?.state ?? null;
  }

  /** Whether blobs go through the kept context (false: the one-call API). */
  get reusesContext(): boolean {
    return this.handle !== null;
  }

  /**
   * The stored form of `content`: zstd when it saves bytes, else `content` itself. Compressed
   * bytes are in this encoder's buffer, valid until the next call (or, for a blob larger than the
   * buffer, such as the tree of a huge directory, in a buffer of their own).
   */
  encode(content: Buffer): Encoded {
    if (content.length < 64 || looksIncompressible(content)) return { stored: content, compressed: false };
    if (this.handle === null || content.length > this.maxBlob) return this.encodeOnce(content);
    const length = this.encodeInto(content);
    return length < content.length
      ? { stored: this.output.subarray(0, length), compressed: true }
      : { stored: content, compressed: false };
  }

  /**
   * zstd into the output buffer, one whole frame; its length. A frame that did not end (zstd
   * could not finish it) counts as no saving, and the context, left mid-frame, is replaced.
   */
  private encodeInto(content: Buffer): number {
    const room = this.output.length;
    this.handle!.writeSync(zlib.constants.ZSTD_e_end, content, 0, content.length, this.output, 0, room);
    const [outputLeft, inputLeft] = this.state! as unknown as [number, number];
    if (inputLeft === 0 && outputLeft > 0) return room - outputLeft;
    this.openContext();
    return content.length;
  }

  private encodeOnce(content: Buffer): Encoded {
    const smaller = zlib.zstdCompressSync(content, {
      pledgedSrcSize: content.length,
      params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL },
    });
    this.uncollected += smaller.length;
    if (this.uncollected >= COLLECT_EVERY) {
      this.uncollected = 0;
      collectGarbage('all');
    }
    return smaller.length < content.length
      ? { stored: smaller, compressed: true }
      : { stored: content, compressed: false };
  }
}

/**
 * Decompresses blobs one after another with one zstd context, each straight into a buffer of
 * its known size: one allocation per blob, no output pieces joined, and no work on libuv's
 * pool (for threads doing nothing else: a restore's, an extract's). A frame that is not valid
 * zstd, or that does not come to exactly the size the index gives, is refused; the context is
 * then replaced (zstd leaves it unusable after some errors). Null where zlib does not hold its
 * handle as this expects: the caller then uses zlib's own API.
 */
export class BlobDecoder {
  private native: { handle: ZlibHandle; state: Uint32Array } | null = null;
  private failure: string | null = null;

  static create(): BlobDecoder | null {
    const decoder = new BlobDecoder();
    return decoder.open() ? decoder : null;
  }

  private open(): boolean {
    this.native = nativeZlib(zlib.createZstdDecompress());
    if (this.native === null) return false;
    this.native.handle.onerror = (message) => {
      this.failure = message;
    };
    return true;
  }

  /** The content of a compressed blob of `raw` bytes; throws if it is not exactly that. */
  decode(stored: Uint8Array, raw: number): Buffer {
    const content = Buffer.allocUnsafe(raw);
    this.decodeInto(stored, content);
    return content;
  }

  /** Decompresses a blob into `content`, whose length is the blob's; throws unless it fills it exactly. */
  decodeInto<T extends Uint8Array>(stored: Uint8Array, content: T): T {
    const { handle, state } = this.native!;
    const raw = content.length;
    this.failure = null;
    handle.reset();
    handle.writeSync(zlib.constants.ZSTD_e_end, stored, 0, stored.length, content, 0, raw);
    const [outputLeft, inputLeft] = state as unknown as [number, number];
    // Set, if at all, by onerror during writeSync.
    const failure = this.failure as string | null;
    if (failure !== null) this.open();
    if (failure !== null) throw new Error(`not valid zstd: ${failure}`);
    if (outputLeft !== 0 || inputLeft !== 0) throw new Error('its content is not the size the index gives');
    return content;
  }
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

/** A compressor started ahead of need (see startBlobCompressor), for the first writer to take. */
let started: BlobCompressor | null = null;

/**
 * Starts a compressing thread now, for the next BlobWriter of this thread to use: its start
 * (loading its modules) then overlaps other work instead of holding up the first blob.
 */
export function startBlobCompressor(): void {
  started ??= new BlobCompressor();
}

/** The compressor started ahead of need, if any (then no longer held here), or a new one. */
export function takeBlobCompressor(): BlobCompressor {
  const compressor = started ?? new BlobCompressor();
  started = null;
  return compressor;
}

/** Ends the compressor started ahead of need if no writer took it (a snapshot with nothing new). */
export async function closeUntakenBlobCompressor(): Promise<void> {
  const compressor = started;
  started = null;
  await compressor?.close();
}

/** A thread that compresses blobs sent to it, one at a time, in order. */
export class BlobCompressor {
  private readonly thread = new ServingThread<Slab, Slab>(
    threadEntry(import.meta.url, './blob-compressor.thread'),
    'compression',
  );

  /**
   * Compresses the first `length` bytes of `slab`, which moves to the thread meanwhile; resolves
   * with it back, holding the stored form in its first `length` bytes.
   */
  encode(
    slab: ArrayBuffer,
    length: number,
  ): Promise<{ slab: ArrayBuffer; length: number; compressed: boolean }> {
    return this.thread.request({ slab, length, compressed: false }, [slab]);
  }

  close(): Promise<void> {
    return this.thread.close();
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

/**
 * Buffers of a few sizes, powers of two from `smallest` to `largest`, each size pooled as
 * BufferPool pools one: a blob takes the smallest buffer that holds it. A snapshot's small files
 * are a chunk each, of a few KiB: read ahead into buffers of the largest chunk's size, a few
 * hundred of them held hundreds of MB.
 */
export class SizedBufferPool {
  private readonly pools = new Map<number, BufferPool>();

  constructor(
    private readonly smallest: number,
    readonly largest: number,
  ) {}

  /** A buffer of at least `bytes` (at most `largest`). */
  take(bytes: number): ArrayBuffer {
    return this.poolOf(this.sizeFor(bytes)).take();
  }

  /** The size of the buffer `take(bytes)` gives. */
  sizeFor(bytes: number): number {
    let size = this.smallest;
    while (size < bytes && size < this.largest) size *= 2;
    return Math.min(size, this.largest);
  }

  give(buffer: ArrayBuffer): void {
    this.pools.get(buffer.byteLength)?.give(buffer);
  }

  private poolOf(size: number): BufferPool {
    let pool = this.pools.get(size);
    if (pool === undefined) this.pools.set(size, (pool = new BufferPool(size)));
    return pool;
  }
}
