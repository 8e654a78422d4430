import type { CounterStore } from '../shared/counter-store.ts';
import { TooManyRequestsError } from '../shared/errors.ts';

const WINDOW_MS = 15 * 60_000;

/**
 * Counts failed logins per client address and per account, in 15-minute windows. Past the
 * limit, further attempts are refused before the password is even checked. A limit of 0 turns
 * the throttle off.
 */
export class LoginThrottle {
  constructor(
    private readonly store: CounterStore,
    private readonly limit: number,
  ) {}

  private keys(ip: string, login: string): string[] {
    return [`login:ip:${ip}`, `login:account:${login.trim().toLowerCase()}`];
  }

  async assertAllowed(ip: string, login: string): Promise<void> {
    if (this.limit === 0) return;
    for (const key of this.keys(ip, login)) {
      const { count, resetInMs } = await this.store.peek(key);
      if (count >= this.limit) throw new TooManyRequestsError(resetInMs / 1000);
    }
  }

  async recordFailure(ip: string, login: string): Promise<void> {
    if (this.limit === 0) return;
    for (const key of this.keys(ip, login)) await this.store.increment(key, WINDOW_MS);
  }

  async recordSuccess(login: string): Promise<void> {
    if (this.limit === 0) return;
    await this.store.reset(this.keys('', login)[1] ?? '');
  }
}
