/**
 * BlobIndex, the repository's compact map of blob ids to where each blob is: it answers as a Map
 * of the same entries would, through its growth, for ids that share their first bytes, and for
 * strings that are no blob id; and it holds an entry in well under a Map's memory.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobIndex, type BlobLocation } from '../../../src/storage/repository/blob-index.ts';
import { collectGarbage } from '../../../src/shared/collect-garbage.ts';

const idOf = (n: number) => createHash('sha256').update(`blob ${n}`).digest('hex');

/** A location made from `n`, different for each n (and each field apart from the others). */
function placeOf(n: number): BlobLocation {
  return {
    pack: idOf(-1 - (n % 37)),
    kind: n % 3 === 0 ? 'tree' : 'data',
    offset: (n * 7919) % 0xffffffff,
    length: n + 1,
    raw: 0xffffffff - n,
    compressed: n % 2 === 0,
  };
}

describe('BlobIndex', () => {
  it('finds every blob recorded, through its growth, as a Map would', () => {
    const index = new BlobIndex();
    const reference = new Map<string, BlobLocation>();
    for (let n = 0; n < 5000; n++) {
      index.set(idOf(n), placeOf(n));
      reference.set(idOf(n), placeOf(n));
      if (n % 997 === 0) for (const [id, where] of reference) expect(index.get(id)).toEqual(where);
    }
    expect(index.size).toBe(5000);
    for (const [id, where] of reference) {
      expect(index.has(id)).toBe(true);
      expect(index.get(id)).toEqual(where);
    }
    for (let n = 5000; n < 6000; n++) {
      expect(index.has(idOf(n))).toBe(false);
      expect(index.get(idOf(n))).toBeUndefined();
    }
    expect([...index.entries()]).toEqual([...reference.entries()]);
  });

  it('moves a blob recorded again to its new place', () => {
    const index = new BlobIndex();
    index.set(idOf(1), placeOf(1));
    index.set(idOf(2), placeOf(2));
    index.set(idOf(1), placeOf(3));
    expect(index.size).toBe(2);
    expect(index.get(idOf(1))).toEqual(placeOf(3));
    expect(index.get(idOf(2))).toEqual(placeOf(2));
    // Entries whose places share a pack name the same pack (one string: compared by identity).
    const [first, second] = [placeOf(40), placeOf(77)];
    expect(first.pack).toBe(second.pack);
    index.set(idOf(40), first);
    index.set(idOf(77), second);
    expect(index.get(idOf(40))!.pack).toBe(index.get(idOf(77))!.pack);
  });

  it('tells apart ids that share their first bytes (one slot of the table)', () => {
    const index = new BlobIndex();
    const prefix = 'ab'.repeat(16);
    const ids = Array.from({ length: 200 }, (_, n) => prefix + n.toString(16).padStart(32, '0'));
    ids.forEach((id, n) => index.set(id, placeOf(n)));
    ids.forEach((id, n) => expect(index.get(id)).toEqual(placeOf(n)));
    expect(index.has(prefix + 'f'.repeat(32))).toBe(false);
  });

  it('knows no string that is not a blob id, and records none', () => {
    const index = new BlobIndex();
    index.set(idOf(1), placeOf(1));
    for (const odd of ['', idOf(1).slice(0, 63), idOf(1).toUpperCase(), `${idOf(1)}00`, 'zz'.repeat(32)]) {
      expect(index.has(odd)).toBe(false);
      expect(() => index.set(odd, placeOf(1))).toThrow('not a blob id');
    }
    expect(() => index.set(idOf(2), { ...placeOf(2), offset: 2 ** 32 })).toThrow('out of range');
    expect(() => index.set(idOf(2), { ...placeOf(2), length: -1 })).toThrow('out of range');
    expect(index.size).toBe(1);
  });

  it('holds 250,000 blobs in under 70 bytes each', () => {
    const count = 250_000;
    const ids = Array.from({ length: count }, (_, n) => idOf(n)); // the ids themselves are not counted
    const place = placeOf(1);
    collectGarbage('all');
    const before = process.memoryUsage();
    const index = new BlobIndex();
    for (const id of ids) index.set(id, place);
    collectGarbage('all');
    const after = process.memoryUsage();
    const held = after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers);
    expect(index.size).toBe(count);
    expect(held / count).toBeLessThan(70);
  });
});
