/**
 * Content-defined chunking: where a file's content is cut into chunks depends on the bytes, not
 * on their offsets, so an edit in the middle of a file changes the chunks around it and leaves
 * the others (and their ids) as they were: a later backup stores only those.
 *
 * The cut points come from a gear hash (one table lookup, a shift and an add per byte), judged
 * FastCDC's way: nothing is cut in the first `min` bytes of a chunk (they are not even hashed),
 * a stricter mask applies until `avg` bytes and a looser one after, which keeps chunk sizes close
 * to `avg`, and a chunk never exceeds `max`. The gear table is fixed forever: another table would
 * cut the same content elsewhere, and nothing written before would deduplicate against it.
 */

export interface ChunkSizes {
  min: number;
  avg: number;
  max: number;
}

/**
 * 256 KiB to 4 MiB, about 1 MiB on average. Measured on the bench volume (BENCHMARKS.md,
 * "Snapshot backups"): smaller chunks keep a little less of a file edited in place at a few
 * spots, but each costs an index entry, a hash call and a blob header, and below 256 KiB the
 * chunker's share of a first backup grows; larger ones store each edit at a larger size.
 */
export const CHUNK_SIZES: ChunkSizes = { min: 256 * 1024, avg: 1024 * 1024, max: 4 * 1024 * 1024 };

/** The gear table: 256 fixed pseudo-random 32-bit words (a linear congruential sequence). */
const GEAR = (() => {
  const table = new Int32Array(256);
  let state = 0x2545f491;
  for (let i = 0; i < 256; i++) {
    // Two steps per word, taking the high halves: an LCG's low bits repeat too soon.
    state = (Math.imul(state, 1103515245) + 12345) | 0;
    const high = state >>> 16;
    state = (Math.imul(state, 1103515245) + 12345) | 0;
    table[i] = (high << 16) | (state >>> 16) | 0;
  }
  return table;
})();

/** Masks on the hash's high bits (the bits that depend on the most bytes). */
function highMask(bits: number): number {
  return (0xffffffff << (32 - bits)) | 0;
}

export class Chunker {
  private readonly strict: number;
  private readonly loose: number;

  constructor(readonly sizes: ChunkSizes = CHUNK_SIZES) {
    const bits = Math.round(Math.log2(sizes.avg));
    // Normalization level 2: two bits harder before the average, two easier after it.
    this.strict = highMask(bits + 2);
    this.loose = highMask(bits - 2);
  }

  /**
   * The length of the chunk that starts at `start` in `data[start, end)`, or -1 when the cut
   * cannot be known yet: fewer than `max` bytes are there and more may follow (`final` false).
   * With `final`, whatever is left ends the last chunk.
   */
  cut(data: Uint8Array, start: number, end: number, final: boolean): number {
    const { min, avg, max } = this.sizes;
    const available = end - start;
    if (available <= min) return final || available === max ? available : -1;
    const limit = start + Math.min(available, max);
    const normal = Math.min(start + avg, limit);
    const gear = GEAR;
    const strict = this.strict;
    const loose = this.loose;
    let hash = 0;
    let i = start + min;
    for (; i < normal; i++) {
      hash = ((hash << 1) + gear[data[i]!]!) | 0;
      if ((hash & strict) === 0) return i + 1 - start;
    }
    for (; i < limit; i++) {
      hash = ((hash << 1) + gear[data[i]!]!) | 0;
      if ((hash & loose) === 0) return i + 1 - start;
    }
    if (limit - start === max || final) return limit - start;
    return -1;
  }
}
