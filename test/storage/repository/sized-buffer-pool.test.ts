import { describe, expect, it } from 'vitest';
import { SizedBufferPool } from '../../../src/storage/repository/blob-compressor.ts';
import { pooledBytes } from '../../../src/storage/repository/repository.ts';

describe('SizedBufferPool', () => {
  it('gives the smallest power of two that holds the bytes, from the smallest size to the largest', () => {
    const pool = new SizedBufferPool(4096, 1024 * 1024);
    expect(pool.take(1).byteLength).toBe(4096);
    expect(pool.take(4096).byteLength).toBe(4096);
    expect(pool.take(4097).byteLength).toBe(8192);
    expect(pool.take(300_000).byteLength).toBe(512 * 1024);
    expect(pool.take(1024 * 1024).byteLength).toBe(1024 * 1024);
  });

  it('hands a buffer given back to the next taker of its size, and to no other', () => {
    const pool = new SizedBufferPool(4096, 1024 * 1024);
    const small = pool.take(100);
    const large = pool.take(600_000);
    pool.give(small);
    pool.give(large);
    expect(pool.take(5000)).not.toBe(small); // 8 KiB: another size
    expect(pool.take(3000)).toBe(small);
    expect(pool.take(700_000)).toBe(large);
    expect(pool.take(700_000)).not.toBe(large); // taken already: a new one
    pool.give(new ArrayBuffer(5000)); // no size of the pool's: dropped
    expect(pool.take(5000).byteLength).toBe(8192);
  });
});

describe('pooledBytes', () => {
  it('is what a pooled read holds: a small chunk a small buffer, a blob over a slab its own size', () => {
    expect(pooledBytes(10)).toBe(4096);
    expect(pooledBytes(65_536)).toBe(65_536);
    expect(pooledBytes(65_537)).toBe(131_072);
    expect(pooledBytes(3 * 1024 * 1024)).toBe(3 * 1024 * 1024);
  });
});
