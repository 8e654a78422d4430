import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressBlock, gzipMemberBound } from '../../../src/storage/archive/gzip-member.ts';

/** What zlib's own API makes of `input` at `level`, given the room a block has. */
function zlibMember(input: Buffer, level: number): Buffer {
  return gzipSync(input, { level, chunkSize: gzipMemberBound(input.length) });
}

function compressed(input: Buffer, level = 6): Buffer {
  const buffer = new ArrayBuffer(gzipMemberBound(input.length));
  new Uint8Array(buffer).set(input);
  const member = compressBlock({ buffer, length: input.length }, level);
  expect(member.buffer).toBe(buffer); // written over the block, in its own buffer
  return Buffer.from(buffer, 0, member.length);
}

describe('compressBlock', () => {
  const text = Buffer.from('[12:00:00] [Server thread/INFO]: Player joined the game\n'.repeat(20_000));
  const random = randomBytes(1024 * 1024);
  const mixed = Buffer.concat([Buffer.alloc(400_000, 'a'), randomBytes(600_000)]);

  it('makes the very member zlib makes, one block after another, of any size in any order', () => {
    // Random bytes are stored (level 0: they look incompressible); the rest at level 6.
    const cases: [Buffer, number][] = [
      [random, 0],
      [text, 6],
      [Buffer.alloc(0), 6],
      [Buffer.from('x'), 6],
      [mixed, 6],
      [random.subarray(0, 70_000), 0],
      [text.subarray(0, 100), 6],
      [random, 0],
    ];
    for (const [input, level] of cases) {
      const member = compressed(input);
      expect(member.equals(zlibMember(input, level)), `${input.length} bytes at level ${level}`).toBe(true);
      expect(gunzipSync(member).equals(input)).toBe(true);
    }
  });

  it('uses the level asked for when the block is compressible', () => {
    for (const level of [1, 9]) expect(compressed(text, level).equals(zlibMember(text, level))).toBe(true);
  });
});
