import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { storedKey, type CounterStore, type WindowCount } from './counter-store.ts';

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

export interface RedisCounterOptions {
  /** How long one command may take before it fails (and the caller counts elsewhere). */
  timeoutMs: number;
  /** Put before every key, so that Aerie's keys keep to themselves on a shared server. */
  prefix?: string;
}

/**
 * Fixed-window counters in Redis, shared by every Aerie process that uses the same server. Every
 * key has a TTL (its window). Commands fail fast rather than wait for Redis: within `timeoutMs`
 * when it does not answer, at once while it is disconnected (no offline queue), so that a caller
 * can count elsewhere meanwhile (see FallbackCounterStore).
 */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;
  private readonly prefix: string;
  private connecting: Promise<void> | undefined;

  constructor(url: string, options: RedisCounterOptions) {
    this.prefix = options.prefix ?? 'aerie:';
    // ioredis is loaded here, by the processes that use Redis, not by every process.
    const { Redis: Client } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    this.redis = new Client(url, {
      // Connects on first use (see `ready`), so a process that counts nothing never reaches for Redis.
      lazyConnect: true,
      enableOfflineQueue: false,
      commandTimeout: options.timeoutMs,
      connectTimeout: Math.max(options.timeoutMs, 1000),
      maxRetriesPerRequest: 0,
      // A lost connection is retried for as long as it takes, at most a second apart, so that
      // counting goes back to Redis within a second or two of its return.
      retryStrategy: (times) => Math.min(times * 100, 1000),
    });
    // Each command that fails meanwhile rejects to its caller, so the connection's own error
    // events need no handler beyond this one.
    this.redis.on('error', () => undefined);
  }

  async increment(key: string, windowMs: number): Promise<WindowCount> {
    await this.ready();
    const [count, ttl] = (await this.redis.eval(INCREMENT, 1, this.key(key), String(windowMs))) as [
      number,
      number,
    ];
    return { count, resetInMs: ttl };
  }

  async peek(key: string): Promise<WindowCount> {
    await this.ready();
    const [count, ttl] = await Promise.all([this.redis.get(this.key(key)), this.redis.pttl(this.key(key))]);
    if (count === null || ttl < 0) return { count: 0, resetInMs: 0 };
    return { count: Number(count), resetInMs: ttl };
  }

  async decrement(key: string): Promise<void> {
    await this.ready();
    await this.redis.eval(DECREMENT, 1, this.key(key));
  }

  async reset(key: string): Promise<void> {
    await this.ready();
    await this.redis.del(this.key(key));
  }

  /** Resolves when Redis answers a PING; rejects otherwise. */
  async ping(): Promise<void> {
    await this.ready();
    await this.redis.ping();
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') {
      try {
        await this.redis.quit();
        return;
      } catch {
        // Not answering: the connection is dropped below.
      }
    }
    this.redis.disconnect();
  }

  private key(key: string): string {
    return this.prefix + storedKey(key);
  }

  /**
   * Waits for the first connection, which commands without an offline queue would not. Later,
   * while a lost connection is being made again, commands reject at once.
   */
  private async ready(): Promise<void> {
    if (this.redis.status === 'wait') this.connecting ??= this.redis.connect();
    if (this.connecting !== undefined && this.redis.status !== 'ready') await this.connecting;
  }
}
