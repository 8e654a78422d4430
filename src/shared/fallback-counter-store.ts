import type { Logger } from 'pino';
import type { CounterStore, WindowCount } from './counter-store.ts';

/** A shared store that can say whether it answers (Redis). */
export interface PingableCounterStore extends CounterStore {
  /** Resolves when the store answers; rejects otherwise. */
  ping(): Promise<void>;
}

/** What readiness and metrics read of the shared store. */
export interface SharedCounterHealth {
  /** Whether the shared store answered the last call made to it. */
  readonly up: boolean;
  /** Counter operations answered from this process's memory because the shared store failed. */
  readonly fallbacks: number;
  /** Asks the shared store now (within the timeout): whether it answers. */
  probe(): Promise<boolean>;
}

export interface FallbackCounterOptions {
  /** How long a call to the shared store may take before this process counts alone. */
  timeoutMs: number;
  /** After a failure, how long calls go straight to memory before the shared store is tried again. */
  retryMs?: number;
  logger: Logger;
  /** performance.now() unless a test sets it. */
  now?: () => number;
}

class TimedOut extends Error {}

/**
 * Counters in a shared store (Redis), or in this process's memory while it fails: the shared
 * store is an accelerator, never a reason for a request to fail or wait. A call that fails or
 * takes longer than `timeoutMs` is answered from memory, and so is every call for `retryMs`
 * after it, so that a Redis that hangs costs at most one timeout a second rather than one per
 * call. Meanwhile each process counts alone (a limit of N allows up to N per process), from
 * zero; when the shared store answers again, its counts (which it kept) are used again. The
 * change is logged once each way.
 */
export class FallbackCounterStore implements CounterStore, SharedCounterHealth {
  private readonly retryMs: number;
  private readonly now: () => number;
  /** When the shared store last failed, and when it started failing; null while it answers. */
  private failedAt: number | null = null;
  private failingSince = 0;
  private served = 0;

  constructor(
    private readonly shared: PingableCounterStore,
    private readonly memory: CounterStore,
    private readonly options: FallbackCounterOptions,
  ) {
    this.retryMs = options.retryMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
  }

  get up(): boolean {
    return this.failedAt === null;
  }

  get fallbacks(): number {
    return this.served;
  }

  increment(key: string, windowMs: number): Promise<WindowCount> {
    return this.call((store) => store.increment(key, windowMs));
  }

  peek(key: string): Promise<WindowCount> {
    return this.call((store) => store.peek(key));
  }

  decrement(key: string): Promise<void> {
    return this.call((store) => store.decrement(key));
  }

  reset(key: string): Promise<void> {
    return this.call((store) => store.reset(key));
  }

  async probe(): Promise<boolean> {
    try {
      await this.within(this.shared.ping());
      this.answered();
      return true;
    } catch (error) {
      this.failed(error);
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.shared.close(), this.memory.close()]);
  }

  private async call<T>(operation: (store: CounterStore) => Promise<T>): Promise<T> {
    if (this.failedAt === null || this.now() - this.failedAt >= this.retryMs) {
      try {
        const result = await this.within(operation(this.shared));
        this.answered();
        return result;
      } catch (error) {
        this.failed(error);
      }
    }
    this.served += 1;
    return operation(this.memory);
  }

  private answered(): void {
    if (this.failedAt === null) return;
    this.failedAt = null;
    this.options.logger.info(
      { unansweredMs: Math.round(this.now() - this.failingSince) },
      'Redis answers again: rate limits and login throttles are shared again',
    );
  }

  private failed(error: unknown): void {
    const first = this.failedAt === null;
    this.failedAt = this.now();
    if (!first) return;
    this.failingSince = this.failedAt;
    this.options.logger.warn(
      { err: error },
      'Redis does not answer: rate limits and login throttles are counted in this process until it does',
    );
  }

  /** The promise, or a rejection after `timeoutMs` (its own outcome is then ignored). */
  private async within<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new TimedOut(`no answer within ${this.options.timeoutMs} ms`)),
        this.options.timeoutMs,
      );
    });
    promise.catch(() => undefined);
    try {
      return await Promise.race([promise, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
