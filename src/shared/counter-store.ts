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

export class MemoryCounterStore implements CounterStore {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();
  private sweptAt = 0;

  constructor(private readonly now: () => number = Date.now) {}

  increment(key: string, windowMs: number): Promise<WindowCount> {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      window = { count: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count += 1;
    return Promise.resolve({ count: window.count, resetInMs: window.endsAt - now });
  }

  peek(key: string): Promise<WindowCount> {
    const now = this.now();
    const window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) return Promise.resolve({ count: 0, resetInMs: 0 });
    return Promise.resolve({ count: window.count, resetInMs: window.endsAt - now });
  }

  decrement(key: string): Promise<void> {
    const window = this.windows.get(key);
    if (window !== undefined && window.endsAt > this.now() && window.count > 0) window.count -= 1;
    return Promise.resolve();
  }

  reset(key: string): Promise<void> {
    this.windows.delete(key);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.windows.clear();
    return Promise.resolve();
  }

  /** Drops ended windows now and then, so the map holds only live counters. */
  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }
}
