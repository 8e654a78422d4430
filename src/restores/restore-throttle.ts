import type { CounterStore } from '../shared/counter-store.ts';
import { TooManyRequestsError } from '../shared/errors.ts';

const WINDOW_MS = 15 * 60_000;

/**
 * At most `limit` restores queued per server in 15 minutes (null: no limit). A restore takes its
 * count before it is queued and gives it back if it is not, so concurrent requests cannot all
 * slip under the limit.
 */
export class RestoreThrottle {
  constructor(
    private readonly store: CounterStore,
    private readonly limit: number | null,
  ) {}

  async run<T>(serverId: string, restore: () => Promise<T>): Promise<T> {
    if (this.limit === null) return restore();
    const key = `restore:server:${serverId}`;
    const { count, resetInMs } = await this.store.increment(key, WINDOW_MS);
    if (count > this.limit) {
      await this.store.decrement(key);
      throw new TooManyRequestsError(resetInMs / 1000);
    }
    try {
      return await restore();
    } catch (error) {
      await this.store.decrement(key);
      throw error;
    }
  }
}
