/** What `parallelGzip` and its compression threads send each other, and the compression itself. */
import zlib, { gzipSync } from 'node:zlib';
import { looksIncompressible } from './compressibility.ts';
import { nativeZlib, type ZlibHandle } from './zlib-handle.ts';

/** A block sent to a compression thread: the first `length` bytes of `buffer`. */
export interface GzipBlock {
  buffer: ArrayBuffer;
  length: number;
}

/**
 * A compression thread's answer: the same buffer, now holding the block's gzip member in its
 * first `length` bytes (the input is no longer needed once it is compressed).
 */
export interface GzipMember {
  buffer: ArrayBuffer;
  length: number;
}

/**
 * The most a gzip member of `bytes` input bytes can take: deflate's worst case, the header and
 * the trailer. A block's buffer has this size, so that its member always fits in it.
 */
export function gzipMemberBound(bytes: number): number {
  return Math.max(64 * 1024, bytes + (bytes >> 12) + (bytes >> 14) + 1024);
}

/**
 * Makes gzip members one after another with one zlib context per level, each straight into one
 * output buffer used again for the next: the bytes zlib's own API gives (the same header,
 * deflate data and trailer), without the output buffer it allocates per call, which a thread
 * compressing a MiB after another would leave for the garbage collector by the hundred. Null
 * where zlib does not hold its handle as this expects: zlib's own API is used then.
 */
class GzipEncoder {
  private readonly contexts = new Map<number, { handle: ZlibHandle; state: Uint32Array }>();
  private output = new Uint8Array(0);

  /** The member of `input` at `level`, in a buffer valid until the next call. */
  encode(input: Uint8Array, level: number): Uint8Array | null {
    const context = this.contextOf(level);
    if (context === null) return null;
    const bound = gzipMemberBound(input.length);
    if (this.output.length < bound) this.output = new Uint8Array(bound);
    const { handle, state } = context;
    handle.reset();
    // Exactly the bound as room, as zlib's own API is given it (stored blocks split by the room).
    handle.writeSync(zlib.constants.Z_FINISH, input, 0, input.length, this.output, 0, bound);
    const [outputLeft, inputLeft] = state as unknown as [number, number];
    // Room for the whole member was given: all of the input is taken, and some room is left.
    if (inputLeft !== 0 || outputLeft === 0) throw new Error('a gzip member did not fit its bound');
    return this.output.subarray(0, bound - outputLeft);
  }

  private contextOf(level: number): { handle: ZlibHandle; state: Uint32Array } | null {
    const context = this.contexts.get(level);
    if (context !== undefined) return context;
    const native = nativeZlib(zlib.createGzip({ level }));
    if (native !== null) this.contexts.set(level, native);
    return native;
  }
}

/** This thread's encoder (one per thread: a context is not shared across threads). */
const encoder = new GzipEncoder();

/**
 * Compresses the block into one gzip member (stored as it is when it looks incompressible:
 * compressibility.ts), written over the block in the block's own buffer.
 */
export function compressBlock(block: GzipBlock, level: number): GzipMember {
  const input = new Uint8Array(block.buffer, 0, block.length);
  const chosen = looksIncompressible(input) ? 0 : level;
  const compressed =
    encoder.encode(input, chosen) ??
    gzipSync(input, { level: chosen, chunkSize: gzipMemberBound(block.length) });
  if (compressed.length > block.buffer.byteLength)
    throw new Error(`a gzip member of ${compressed.length} bytes does not fit its block's buffer`);
  new Uint8Array(block.buffer).set(compressed);
  return { buffer: block.buffer, length: compressed.length };
}
