/** What `parallelGzip` and its compression threads send each other. */

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
