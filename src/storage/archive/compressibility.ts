import { deflateRawSync } from 'node:zlib';

/** Bytes read from each of three places in a block to judge it. */
const SAMPLE_BYTES = 16 * 1024;

/** A sample that deflate cannot bring below this share of its size counts as incompressible. */
const INCOMPRESSIBLE_RATIO = 0.97;

/**
 * Whether a block is not worth compressing: three samples of it (its start, middle and end),
 * each compressed at zlib's fastest level, all stay within 3% of their size. Such blocks are
 * already compressed data (game worlds, archives, images); deflate at level 6 spends about 16 ms
 * a MiB on them only to write them out as they were, so they are stored as they are instead
 * (level 0: the same bytes in deflate's stored blocks, valid gzip all the same). A block with any
 * compressible sample is compressed as usual, so mixed blocks lose nothing but the samples' cost
 * (about 0.5 ms a MiB).
 */
export function looksIncompressible(block: Uint8Array): boolean {
  if (block.length < 4 * SAMPLE_BYTES) return false;
  const middle = Math.floor((block.length - SAMPLE_BYTES) / 2);
  for (const start of [0, middle, block.length - SAMPLE_BYTES]) {
    const sample = block.subarray(start, start + SAMPLE_BYTES);
    if (deflateRawSync(sample, { level: 1 }).length < sample.length * INCOMPRESSIBLE_RATIO) return false;
  }
  return true;
}
