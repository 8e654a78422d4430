import { describe, expect, it } from 'vitest';
import { MemoryCounterStore, storedKey } from '../../src/shared/counter-store.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function setUp(limits: ConstructorParameters<typeof MemoryCounterStore>[1] = {}) {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const store = new MemoryCounterStore(() => now, limits);
  return { store, advance: (ms: number) => (now += ms) };
}

describe('MemoryCounterStore', () => {
  it('counts fixed windows, takes counts back and starts again when a window ends', async () => {
    const { store, advance } = setUp();
    expect(await store.increment('a', MINUTE)).toEqual({ count: 1, resetInMs: MINUTE });
    advance(20_000);
    expect(await store.increment('a', MINUTE)).toEqual({ count: 2, resetInMs: 40_000 });
    await store.decrement('a');
    expect(await store.peek('a')).toEqual({ count: 1, resetInMs: 40_000 });
    advance(40_000);
    expect(await store.peek('a')).toEqual({ count: 0, resetInMs: 0 });
    expect(await store.increment('a', MINUTE)).toEqual({ count: 1, resetInMs: MINUTE });
  });

  it('holds at most maxKeys windows, dropping the least recently counted', async () => {
    const { store } = setUp({ maxKeys: 10 });
    await store.increment('hot', MINUTE);
    for (let i = 0; i < 100; i++) {
      await store.increment(`cold:${i}`, MINUTE);
      await store.increment('hot', MINUTE);
    }
    expect(store.size).toBeLessThanOrEqual(10);
    expect(store.evicted).toBe(101 - store.size);
    // The counter kept in use kept its count; the cold ones went, oldest first.
    expect((await store.peek('hot')).count).toBe(101);
    expect((await store.peek('cold:0')).count).toBe(0);
    expect((await store.peek('cold:99')).count).toBe(1);
  });

  it('keeps windows longer than a day apart, out of reach of a flood of short ones', async () => {
    const { store } = setUp({ maxKeys: 100, maxLastingKeys: 2 });
    await store.increment('login:known:user:1:10.0.0.1', 30 * DAY);
    for (let i = 0; i < 1000; i++) await store.increment(`login:ip:10.1.${i >> 8}.${i & 255}`, 15 * MINUTE);
    expect((await store.peek('login:known:user:1:10.0.0.1')).count).toBe(1);
    expect(store.size).toBeLessThanOrEqual(101);
    // The long windows have a ceiling of their own.
    for (let i = 0; i < 3; i++) await store.increment(`login:known:user:1:10.0.1.${i}`, 30 * DAY);
    expect((await store.peek('login:known:user:1:10.0.0.1')).count).toBe(0);
    expect((await store.peek('login:known:user:1:10.0.1.2')).count).toBe(1);
  });

  it('keeps a long key by its digest: a fixed size, and still one counter per key', async () => {
    const { store } = setUp();
    const long = (c: string) => `login:account-hour:login:${c.repeat(191)}`;
    expect(storedKey('login:ip:10.0.0.1')).toBe('login:ip:10.0.0.1');
    expect(storedKey(long('a'))).toHaveLength(44);
    expect(storedKey(long('a'))).not.toBe(storedKey(long('b')));
    await store.increment(long('a'), MINUTE);
    await store.increment(long('a'), MINUTE);
    await store.increment(long('b'), MINUTE);
    expect((await store.peek(long('a'))).count).toBe(2);
    expect((await store.peek(long('b'))).count).toBe(1);
  });

  it('sweeps ended windows', async () => {
    const { store, advance } = setUp();
    for (let i = 0; i < 50; i++) await store.increment(`k:${i}`, MINUTE);
    advance(2 * MINUTE);
    await store.increment('fresh', MINUTE);
    expect(store.size).toBe(1);
    expect(store.evicted).toBe(0);
  });
});
