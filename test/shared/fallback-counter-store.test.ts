/**
 * FallbackCounterStore over a real RedisCounterStore: a Redis that was never there, one that
 * stops, one that hangs, and each coming back. No call may fail or wait much past the timeout.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryCounterStore } from '../../src/shared/counter-store.ts';
import { FallbackCounterStore } from '../../src/shared/fallback-counter-store.ts';
import { RedisCounterStore } from '../../src/shared/redis-counter-store.ts';
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../support/private-redis.ts';
import { freePort, until } from '../support/wait.ts';

const TIMEOUT_MS = 200;
const MINUTE = 60_000;

const opened: FallbackCounterStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

function storeOn(url: string) {
  const logger = { warn: vi.fn(), info: vi.fn() };
  const store = new FallbackCounterStore(
    new RedisCounterStore(url, { timeoutMs: TIMEOUT_MS }),
    new MemoryCounterStore(),
    { timeoutMs: TIMEOUT_MS, logger: logger as unknown as Logger },
  );
  opened.push(store);
  return { store, logger };
}

/** The call's result and how long it took, in ms. */
async function timed<T>(call: Promise<T>): Promise<[T, number]> {
  const began = performance.now();
  const result = await call;
  return [result, performance.now() - began];
}

describe('FallbackCounterStore without a Redis to reach', () => {
  it('counts in memory from the first call, at once, and says so once', async () => {
    const { store, logger } = storeOn(`redis://127.0.0.1:${await freePort()}`);
    const [first, ms] = await timed(store.increment('k', MINUTE));
    expect(first.count).toBe(1);
    expect(ms).toBeLessThan(TIMEOUT_MS + 300);
    for (let i = 0; i < 20; i++) {
      const [, each] = await timed(store.increment('k', MINUTE));
      expect(each).toBeLessThan(TIMEOUT_MS + 300);
    }
    expect(await store.peek('k')).toMatchObject({ count: 21 });
    await store.decrement('k');
    expect(await store.peek('k')).toMatchObject({ count: 20 });
    expect(store.up).toBe(false);
    expect(store.fallbacks).toBeGreaterThanOrEqual(23);
    expect(await store.probe()).toBe(false);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.info).not.toHaveBeenCalled();
  });

  it('closes without waiting for a connection that never came', async () => {
    const { store } = storeOn(`redis://127.0.0.1:${await freePort()}`);
    await store.increment('k', MINUTE);
    const [, ms] = await timed(store.close());
    expect(ms).toBeLessThan(500);
  });
});

describe.runIf(redisServerInstalled)('FallbackCounterStore on a Redis that goes away', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await startPrivateRedis();
  });
  afterAll(async () => {
    redis.resume();
    await redis.stop();
  });

  it('counts in Redis, in memory while Redis is stopped, and in Redis again once it is back', async () => {
    const { store, logger } = storeOn(redis.url);
    const other = storeOn(redis.url).store;
    const key = `outage:${randomUUID()}`;
    await store.increment(key, MINUTE);
    await other.increment(key, MINUTE);
    // Shared: the two stores count as one.
    expect((await store.peek(key)).count).toBe(2);
    expect(store.up).toBe(true);
    expect(await store.probe()).toBe(true);

    await redis.stop();
    for (let i = 0; i < 5; i++) {
      const [count, ms] = await timed(store.increment(key, MINUTE));
      expect(ms).toBeLessThan(TIMEOUT_MS + 300);
      // From memory now: this process's own count, from zero.
      expect(count.count).toBe(i + 1);
    }
    expect(store.up).toBe(false);
    expect(logger.warn).toHaveBeenCalledTimes(1);

    await redis.start();
    const fresh = `outage:${randomUUID()}`;
    await until(
      async () => {
        await store.increment(fresh, MINUTE);
        return store.up;
      },
      { timeoutMs: 5000, what: 'the store to count in Redis again' },
    );
    expect(logger.info).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    // In Redis again: the other process sees what this one counts.
    await store.increment(key, MINUTE);
    await until(async () => (await other.peek(key)).count === 1 || undefined, {
      timeoutMs: 5000,
      what: 'the other store to read Redis again',
    });
  });

  it('answers within the timeout while Redis hangs, and skips it for a while after each failure', async () => {
    const { store, logger } = storeOn(redis.url);
    const key = `hang:${randomUUID()}`;
    await store.increment(key, MINUTE);
    redis.pause();
    try {
      const [, first] = await timed(store.increment(key, MINUTE));
      expect(first).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(first).toBeLessThan(TIMEOUT_MS + 300);
      // Straight to memory until a second has passed: no call pays the timeout again meanwhile.
      const [, rest] = await timed(
        Promise.all(Array.from({ length: 50 }, () => store.increment(key, MINUTE))),
      );
      expect(rest).toBeLessThan(100);
      expect(await store.probe()).toBe(false);
      expect(store.up).toBe(false);
      expect(logger.warn).toHaveBeenCalledTimes(1);
    } finally {
      redis.resume();
    }
    expect(await store.probe()).toBe(true);
    expect(store.up).toBe(true);
    expect(logger.info).toHaveBeenCalledTimes(1);
  });
});
