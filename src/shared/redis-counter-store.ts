import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { CounterStore, WindowCount } from './counter-store.ts';

// Each script runs atomically on the Redis server, so processes sharing it count as one.
const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}`;
const DECREMENT = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then redis.call('DECR', KEYS[1]) end
return 0`;

/** Fixed-window counters in Redis, shared by every Aerie process that uses the same server. */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix = 'aerie:',
  ) {
    // Connects on first use, so a command that counts nothing never reaches for Redis. A lost
    // connection is retried by ioredis; each command that fails meanwhile rejects to its caller,
    // so the connection's own error events need no handler beyond this one.
    // ioredis is loaded here, by the processes that use Redis, not by every process.
    const { Redis: Client } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    this.redis = new Client(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: true });
    this.redis.on('error', () => undefined);
  }

  async increment(key: string, windowMs: number): Promise<WindowCount> {
    const [count, ttl] = (await this.redis.eval(INCREMENT, 1, this.prefix + key, String(windowMs))) as [
      number,
      number,
    ];
    return { count, resetInMs: ttl };
  }

  async peek(key: string): Promise<WindowCount> {
    const [count, ttl] = await Promise.all([
      this.redis.get(this.prefix + key),
      this.redis.pttl(this.prefix + key),
    ]);
    if (count === null || ttl < 0) return { count: 0, resetInMs: 0 };
    return { count: Number(count), resetInMs: ttl };
  }

  async decrement(key: string): Promise<void> {
    await this.redis.eval(DECREMENT, 1, this.prefix + key);
  }

  async reset(key: string): Promise<void> {
    await this.redis.del(this.prefix + key);
  }

  async close(): Promise<void> {
    if (this.redis.status === 'wait') return this.redis.disconnect(); // never connected
    await this.redis.quit();
  }
}
