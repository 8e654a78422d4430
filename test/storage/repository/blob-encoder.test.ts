/**
 * BlobEncoder: zstd through one kept context into one buffer, blob after blob. Every stored form
 * decompresses to its blob; what does not shrink is stored as it is; a blob larger than the
 * encoder's buffer and the one-call fallback give the same content back. BlobDecoder: each blob
 * decompressed into a buffer of its size; frames that are not zstd, or not of that size, refused,
 * and the decoder still good for the next.
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BlobDecoder, BlobEncoder } from '../../../src/storage/repository/blob-compressor.ts';

const KiB = 1024;

/** Text that compresses, different for each seed. */
function logText(bytes: number, seed: number): Buffer {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const line = `[12:${String(i % 60).padStart(2, '0')}:0${seed % 10}] [Server thread/INFO]: Player${(i * seed) % 97} moved ${i * 31}\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, bytes);
}

function decoded(stored: Buffer, compressed: boolean): Buffer {
  return compressed ? zlib.zstdDecompressSync(stored) : stored;
}

describe.each([
  ['the kept context', { oneCall: false }],
  ['the one-call fallback', { oneCall: true }],
])('BlobEncoder through %s', (_label, options) => {
  it('gives back, blob after blob, stored forms that decompress to each blob', () => {
    const encoder = new BlobEncoder(256 * KiB, options);
    expect(encoder.reusesContext).toBe(options.oneCall !== true);
    for (let seed = 1; seed <= 40; seed++) {
      const blob = logText(4 * KiB + ((seed * 7919) % (250 * KiB)), seed);
      const { stored, compressed } = encoder.encode(blob);
      expect(compressed).toBe(true);
      expect(stored.length).toBeLessThan(blob.length / 2);
      // A frame stands alone: nothing of the previous blob is needed to read it.
      expect(decoded(Buffer.from(stored), compressed).equals(blob)).toBe(true);
    }
  });

  it('stores as they are a blob that does not shrink, a tiny one, and a mixed one that barely would', () => {
    const encoder = new BlobEncoder(256 * KiB, options);
    const random = randomBytes(200 * KiB);
    expect(encoder.encode(random)).toEqual({ stored: random, compressed: false });
    const tiny = Buffer.from('x'.repeat(40));
    expect(encoder.encode(tiny)).toEqual({ stored: tiny, compressed: false });
    // Too short to be sampled, so zstd is tried: its frame is longer than the blob.
    const short = randomBytes(1000);
    expect(encoder.encode(short)).toEqual({ stored: short, compressed: false });
    // Mostly random with a compressible tail: stored compressed only if that saves bytes, and
    // then it reads back whole.
    const mixed = Buffer.concat([randomBytes(120 * KiB), logText(8 * KiB, 3)]);
    const { stored, compressed } = encoder.encode(mixed);
    expect(stored.length).toBeLessThanOrEqual(mixed.length);
    expect(decoded(Buffer.from(stored), compressed).equals(mixed)).toBe(true);
    // And the encoder goes on as before.
    const after = logText(64 * KiB, 5);
    const next = encoder.encode(after);
    expect(decoded(Buffer.from(next.stored), next.compressed).equals(after)).toBe(true);
  });

  it('compresses every blob alike, whatever came before it (the context keeps its level)', () => {
    const encoder = new BlobEncoder(256 * KiB, options);
    const text = logText(200 * KiB, 4);
    const first = encoder.encode(text).stored.length;
    for (const other of [randomBytes(256 * KiB), randomBytes(3000), logText(100 * KiB, 8)]) {
      encoder.encode(other);
      expect(encoder.encode(text).stored.length).toBe(first);
    }
    // The encoder's level (1), not zstd's default (3), which stores this text otherwise; a frame
    // header may differ by the few bytes that give the content's size.
    const atLevel = (level: number) =>
      zlib.zstdCompressSync(text, { params: { [zlib.constants.ZSTD_c_compressionLevel]: level } }).length;
    expect(Math.abs(atLevel(3) - atLevel(1))).toBeGreaterThan(100);
    expect(Math.abs(first - atLevel(1))).toBeLessThanOrEqual(16);
  });

  it('compresses a blob larger than its buffer (the tree of a huge directory) in a buffer of its own', () => {
    const encoder = new BlobEncoder(64 * KiB, options);
    const big = logText(300 * KiB, 9);
    const { stored, compressed } = encoder.encode(big);
    expect(compressed).toBe(true);
    expect(decoded(stored, compressed).equals(big)).toBe(true);
    const small = logText(32 * KiB, 2);
    const again = encoder.encode(small);
    expect(decoded(Buffer.from(again.stored), again.compressed).equals(small)).toBe(true);
  });
});

describe('BlobDecoder', () => {
  it('decompresses blob after blob to exactly their content, and refuses what is not so', () => {
    const encoder = new BlobEncoder(256 * KiB);
    const decoder = BlobDecoder.create();
    expect(decoder).not.toBeNull();
    const blobs = [1, 2, 3].map((seed) => logText(20 * KiB * seed, seed));
    const frames = blobs.map((blob) => Buffer.from(encoder.encode(blob).stored));
    const good = () =>
      frames.forEach((frame, i) =>
        expect(decoder!.decode(frame, blobs[i]!.length).equals(blobs[i]!)).toBe(true),
      );
    good();

    expect(() => decoder!.decode(Buffer.from('not a zstd frame, only bytes'), 100)).toThrow(/not valid zstd/);
    good(); // the context was replaced after the error
    expect(() => decoder!.decode(frames[0]!.subarray(0, frames[0]!.length - 4), blobs[0]!.length)).toThrow();
    good();
    // A frame of more, or fewer, bytes than the index says.
    expect(() => decoder!.decode(frames[1]!, blobs[1]!.length - 1)).toThrow(/not the size/);
    expect(() => decoder!.decode(frames[1]!, blobs[1]!.length + 1)).toThrow(/not the size/);
    good();
  });
});
