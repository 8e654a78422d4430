import { createHash } from 'node:crypto';

/**
 * Fixed-window counters, for throttles and rate limits. The in-memory store serves one
 * process; a shared store (Redis) serves several.
 */
export interface WindowCount {
  count: number;
  /** Milliseconds until the window ends and the count starts again from zero. */
  resetInMs: number;
}

export interface CounterStore {
  increment(key: string, windowMs: number): Promise<WindowCount>;
  peek(key: string): Promise<WindowCount>;
  /** Takes back one count of the current window (never below zero; nothing if it has ended). */
  decrement(key: string): Promise<void>;
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

/** Keys longer than this are kept by their digest. */
const LONGEST_KEY = 96;

/**
 * The key a store keeps: as given, or, when a client made it long (a 191-character username), a
 * SHA-256 digest of it, so that every counter costs the same whatever name a request carried.
 */
export function storedKey(key: string): string {
  return key.length <= LONGEST_KEY ? key : `#${createHash('sha256').update(key).digest('base64url')}`;
}

export interface MemoryCounterLimits {
  /**
   * Windows of a day or less (what any request may start): at most this many, the least
   * recently counted dropped first.
   */
  maxKeys?: number;
  /** Longer windows (an address known to an account, which only a successful login starts). */
  maxLastingKeys?: number;
}

/** Windows longer than this are kept apart, out of reach of a flood of short ones. */
const LASTING_MS = 24 * 60 * 60_000;

interface Window {
  count: number;
  endsAt: number;
}

/** Windows in the order they were last counted (a Map iterates in insertion order), at most `max`. */
class RecentWindows {
  readonly map = new Map<string, Window>();

  constructor(readonly max: number) {}

  /**
   * Puts the window last (the most recent). Past `max`, drops the least recent tenth in one
   * pass: dropping one at a time would make each drop step over all the entries deleted before
   * it, and a flood quadratic. Returns how many live windows (not yet ended at `now`) it dropped.
   */
  put(key: string, window: Window, now: number): number {
    this.map.delete(key);
    this.map.set(key, window);
    if (this.map.size <= this.max) return 0;
    const keep = Math.floor(this.max * 0.9);
    let live = 0;
    for (const [oldest, dropped] of this.map) {
      if (this.map.size <= keep) break;
      this.map.delete(oldest);
      if (dropped.endsAt > now) live += 1;
    }
    return live;
  }
}

/**
 * Counters in this process's memory, bounded: past `maxKeys` windows, the least recently
 * counted are dropped. Each costs about 210 bytes (measured: test/http/refused-flood.test.ts),
 * so the default ceiling of 100,000 holds about 21 MiB however many names or addresses clients
 * make up. Dropping a window forgets its count, so it is the coldest that goes: a counter a
 * flood keeps hitting (its own address, the account it guesses at) stays. The long windows
 * (known addresses) are kept apart, with a ceiling of their own, so that no flood of the short
 * ones, which any request can start, evicts them.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly brief: RecentWindows;
  private readonly lasting: RecentWindows;
  private sweptAt = 0;
  private dropped = 0;

  constructor(
    private readonly now: () => number = Date.now,
    limits: MemoryCounterLimits = {},
  ) {
    this.brief = new RecentWindows(limits.maxKeys ?? 100_000);
    this.lasting = new RecentWindows(limits.maxLastingKeys ?? 100_000);
  }

  increment(key: string, windowMs: number): Promise<WindowCount> {
    const now = this.now();
    this.sweep(now);
    const stored = storedKey(key);
    const windows = windowMs > LASTING_MS ? this.lasting : this.brief;
    let window = windows.map.get(stored);
    if (window === undefined || window.endsAt <= now) window = { count: 0, endsAt: now + windowMs };
    window.count += 1;
    this.dropped += windows.put(stored, window, now);
    return Promise.resolve({ count: window.count, resetInMs: window.endsAt - now });
  }

  peek(key: string): Promise<WindowCount> {
    const now = this.now();
    const window = this.find(storedKey(key));
    if (window === undefined || window.endsAt <= now) return Promise.resolve({ count: 0, resetInMs: 0 });
    return Promise.resolve({ count: window.count, resetInMs: window.endsAt - now });
  }

  decrement(key: string): Promise<void> {
    const window = this.find(storedKey(key));
    if (window !== undefined && window.endsAt > this.now() && window.count > 0) window.count -= 1;
    return Promise.resolve();
  }

  reset(key: string): Promise<void> {
    const stored = storedKey(key);
    this.brief.map.delete(stored);
    this.lasting.map.delete(stored);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.brief.map.clear();
    this.lasting.map.clear();
    return Promise.resolve();
  }

  /** How many windows are held (ended ones included until swept). */
  get size(): number {
    return this.brief.map.size + this.lasting.map.size;
  }

  /** Live windows dropped to stay within the ceilings, since the store was made. */
  get evicted(): number {
    return this.dropped;
  }

  private find(stored: string): Window | undefined {
    return this.brief.map.get(stored) ?? this.lasting.map.get(stored);
  }

  /** Drops ended windows now and then, so the maps hold only live counters. */
  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    for (const { map } of [this.brief, this.lasting])
      for (const [key, window] of map) if (window.endsAt <= now) map.delete(key);
  }
}
