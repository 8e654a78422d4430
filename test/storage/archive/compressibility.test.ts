import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { looksIncompressible } from '../../../src/storage/archive/compressibility.ts';
import { parallelGzip } from '../../../src/storage/archive/parallel-gzip.ts';

const MiB = 1024 * 1024;
const text = (bytes: number) =>
  Buffer.from('[12:00:01] [Server thread/INFO]: player joined the game\n'.repeat(bytes / 50)).subarray(
    0,
    bytes,
  );

describe('looksIncompressible', () => {
  it('judges random bytes incompressible and text compressible', () => {
    expect(looksIncompressible(randomBytes(MiB))).toBe(true);
    expect(looksIncompressible(text(MiB))).toBe(false);
  });

  it('compresses a block with text at its start, middle or end', () => {
    for (const at of [0, MiB / 2 - 8192, MiB - 20_000]) {
      const block = randomBytes(MiB);
      text(20_000).copy(block, at);
      expect(looksIncompressible(block)).toBe(false);
    }
  });

  it('leaves small blocks to the compressor', () => {
    expect(looksIncompressible(randomBytes(60_000))).toBe(false);
  });
});

describe('parallelGzip with incompressible blocks', () => {
  it('stores them in valid members no larger than the input by more than 0.1%', async () => {
    const data = Buffer.concat([randomBytes(2 * MiB), text(MiB), randomBytes(MiB)]);
    const members: Buffer[] = [];
    for await (const member of parallelGzip({ concurrency: 2 })([data])) members.push(member);
    const output = Buffer.concat(members);
    expect(gunzipSync(output).equals(data)).toBe(true);
    expect(members).toHaveLength(4);
    // The random blocks are stored (a few bytes over their size); the text block shrinks.
    expect(members[0]!.length).toBeLessThan(MiB * 1.001);
    expect(members[2]!.length).toBeLessThan(MiB / 10);
  });
});
