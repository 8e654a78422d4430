/**
 * The content-defined chunker: cut points follow the content (an insertion moves the cuts near it
 * and no others), every chunk is within the sizes, a cut that is not known yet is not guessed
 * (`final`), and the same bytes are always cut the same way, whatever the reads they came in.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CHUNK_SIZES, Chunker, type ChunkSizes } from '../../../src/storage/repository/chunker.ts';
import { blobId } from '../../../src/storage/repository/repository.ts';

const MIB = 1024 * 1024;

/** The same pseudo-random bytes for a seed, every run (AES-256-CTR over zeros). */
function seeded(length: number, seed: string): Buffer {
  const key = Buffer.alloc(32);
  key.write(seed);
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(length));
}

/** The chunk lengths of a whole buffer. */
function lengths(data: Buffer, chunker = new Chunker()): number[] {
  const out: number[] = [];
  for (let start = 0; start < data.length;) {
    const length = chunker.cut(data, start, data.length, true);
    expect(length).toBeGreaterThan(0);
    out.push(length);
    start += length;
  }
  return out;
}

/** The chunks' ids, in order. */
function ids(data: Buffer, chunker = new Chunker()): string[] {
  let start = 0;
  return lengths(data, chunker).map((length) => {
    const id = blobId(data.subarray(start, start + length));
    start += length;
    return id;
  });
}

/**
 * Chunk lengths as snapshot-writer.ts finds them: a window of twice the largest chunk, filled by
 * reads of the sizes `readSizes` gives, cut while cuts are known, the rest moved to the front.
 */
function streamedLengths(data: Buffer, readSizes: () => number, chunker = new Chunker()): number[] {
  const window = Buffer.alloc(2 * chunker.sizes.max);
  const out: number[] = [];
  let position = 0;
  let start = 0;
  let end = 0;
  for (;;) {
    let eof = position === data.length;
    while (!eof && end < window.length) {
      const n = Math.min(readSizes(), window.length - end, data.length - position);
      data.copy(window, end, position, position + n);
      end += n;
      position += n;
      eof = position === data.length;
    }
    while (start < end) {
      const length = chunker.cut(window, start, end, eof);
      if (length < 0) break;
      out.push(length);
      start += length;
    }
    if (eof && start === end) return out;
    window.copyWithin(0, start, end);
    end -= start;
    start = 0;
  }
}

describe('the chunker', () => {
  it('cuts where the content says: bytes inserted at the start leave the later chunks as they were', () => {
    const original = randomBytes(10 * MIB);
    const edited = Buffer.concat([randomBytes(100), original]);
    const before = ids(original);
    const after = ids(edited);
    expect(before.length).toBeGreaterThanOrEqual(4);
    const kept = new Set(before);
    // Only the first chunk or two change; every later one is the same chunk, at a shifted offset.
    expect(after.slice(2).every((id) => kept.has(id))).toBe(true);
    expect(after.filter((id) => kept.has(id)).length).toBeGreaterThanOrEqual(before.length - 2);
    expect(after.at(-1)).toBe(before.at(-1));
  });

  it('keeps the chunks before an edit in place, and those from a little after it, the same', () => {
    const original = seeded(10 * MIB, 'edit-in-place');
    const edited = Buffer.from(original);
    const at = 5 * MIB;
    seeded(4096, 'the edit').copy(edited, at);
    const before = new Set(ids(original));
    // Each chunk of the edited content, with where it starts; those not stored before are new.
    let start = 0;
    const chunks = lengths(edited).map((length) => {
      const chunk = { start, length, id: blobId(edited.subarray(start, start + length)) };
      start += length;
      return chunk;
    });
    const changed = chunks.filter((chunk) => !before.has(chunk.id));
    expect(changed.length).toBeGreaterThanOrEqual(1);
    // A cut that moves moves the next few (no cut is looked for in a chunk's first `min` bytes),
    // until they fall in step again: what changes is near the edit, and far less than the file.
    expect(changed.every((chunk) => chunk.start + chunk.length > at - CHUNK_SIZES.max)).toBe(true);
    expect(changed.every((chunk) => chunk.start < at + 2 * MIB)).toBe(true);
    expect(changed.reduce((sum, chunk) => sum + chunk.length, 0)).toBeLessThan(2.5 * MIB);
  });

  it('makes every chunk but the last at least `min` and none more than `max`, about `avg` long', () => {
    for (const [sizes, data] of [
      [CHUNK_SIZES, randomBytes(24 * MIB)],
      [{ min: 64, avg: 256, max: 1024 }, randomBytes(2 * MIB)],
    ] as [ChunkSizes, Buffer][]) {
      const chunker = new Chunker(sizes);
      const found = lengths(data, chunker);
      expect(found.reduce((a, b) => a + b, 0)).toBe(data.length);
      for (const length of found.slice(0, -1)) {
        expect(length).toBeGreaterThanOrEqual(sizes.min);
        expect(length).toBeLessThanOrEqual(sizes.max);
      }
      expect(found.at(-1)!).toBeLessThanOrEqual(sizes.max);
      const mean = data.length / found.length;
      expect(mean).toBeGreaterThan(sizes.avg / 2);
      expect(mean).toBeLessThan(sizes.avg * 2);
    }
  });

  it('cuts content without cut points (zeros) at `max`', () => {
    expect(lengths(Buffer.alloc(10 * MIB))).toEqual(Array.from({ length: 10 }, () => CHUNK_SIZES.max));
    // Exactly `max` bytes there, more to come: the cut is known.
    expect(new Chunker().cut(Buffer.alloc(5 * MIB), 0, CHUNK_SIZES.max, false)).toBe(CHUNK_SIZES.max);
  });

  it('does not guess a cut it cannot know yet, and ends the last chunk with `final`', () => {
    const chunker = new Chunker();
    const { min, max } = chunker.sizes;
    const data = seeded(8 * MIB, 'final');
    const first = chunker.cut(data, 0, data.length, true);
    expect(first).toBeGreaterThan(min);
    expect(first).toBeLessThan(max);
    // Up to `min` bytes: nothing is known unless it is the end.
    expect(chunker.cut(data, 0, min, false)).toBe(-1);
    expect(chunker.cut(data, 0, min, true)).toBe(min);
    expect(chunker.cut(data, 0, 10, true)).toBe(10);
    // Fewer bytes than the cut needs: -1, or all of them when they are the last.
    expect(chunker.cut(data, 0, first - 1, false)).toBe(-1);
    expect(chunker.cut(data, 0, first - 1, true)).toBe(first - 1);
    // Once the cut point is in the window, it is found whatever follows, and wherever the chunk starts.
    expect(chunker.cut(data, 0, first, false)).toBe(first);
    expect(chunker.cut(data, 0, first + 12345, false)).toBe(first);
    const shifted = Buffer.concat([randomBytes(777), data]);
    expect(chunker.cut(shifted, 777, shifted.length, false)).toBe(first);
    // A window of any length agrees with the whole buffer: the cut, or -1 before it is there.
    for (let end = min - 1000; end < max + 1000; end += 99_991) {
      const cut = chunker.cut(data, 0, end, false);
      expect(cut).toBe(end >= first ? first : -1);
      expect(chunker.cut(data, 0, end, true)).toBe(Math.min(first, end));
    }
  });

  it('cuts the same bytes the same way, however they are read', () => {
    const data = seeded(20 * MIB, 'deterministic');
    const whole = lengths(data);
    expect(lengths(data)).toEqual(whole);
    expect(lengths(data, new Chunker())).toEqual(whole);
    expect(streamedLengths(data, () => 64 * 1024)).toEqual(whole);
    expect(streamedLengths(data, () => 1 + Math.floor(Math.random() * 3 * MIB))).toEqual(whole);
    expect(streamedLengths(data, () => 8 * MIB)).toEqual(whole);
  });

  it('cuts content in its own window (WebAssembly) where it cuts it in any other buffer', () => {
    const chunker = new Chunker();
    const data = seeded(12 * MIB, 'wasm');
    const window = chunker.window(2 * chunker.sizes.max);
    expect(window.length).toBe(2 * CHUNK_SIZES.max);
    const inWindow: number[] = [];
    for (let position = 0; position < data.length;) {
      const length = Math.min(window.length, data.length - position);
      data.copy(window, 0, position, position + length);
      const final = position + length === data.length;
      const cut = chunker.cut(window, 0, length, final);
      expect(cut).toBeGreaterThan(0);
      inWindow.push(cut);
      position += cut;
    }
    expect(inWindow).toEqual(lengths(data));
    // Content without cut points, and a window that ends before the cut is known.
    window.fill(0);
    expect(chunker.cut(window, 0, window.length, false)).toBe(chunker.sizes.max);
    data.copy(window, 0, 0, chunker.sizes.min + 10);
    expect(chunker.cut(window, 0, chunker.sizes.min + 10, false)).toBe(-1);
  });

  it('cuts as it always has (the gear table is fixed: other cuts would deduplicate nothing)', () => {
    expect(lengths(seeded(MIB, 'random.bin'))).toEqual([264488, 503648, 280440]);
    expect(lengths(seeded(MIB, 'aerie'))).toEqual([310583, 313834, 424159]);
  });
});
