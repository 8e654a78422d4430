import type { CounterStore } from '../shared/counter-store.ts';
import { TooManyRequestsError } from '../shared/errors.ts';

const WINDOW_MS = 15 * 60_000;

/**
 * Counts failed logins per client address and per account (a key the caller chooses: the
 * account's id when it exists, else the name tried), in 15-minute windows. Past the limit,
 * further attempts are refused before the password is even checked. A limit of 0 turns the
 * throttle off.
 *
 * An attempt takes its count before the password is checked and gives it back if it succeeds,
 * so that concurrent attempts cannot all pass the check before any failure is counted.
 */
export class LoginThrottle {
  constructor(
    private readonly store: CounterStore,
    private readonly limit: number,
  ) {}

  private keys(ip: string, account: string): [ip: string, account: string] {
    return [`login:ip:${ip}`, `login:account:${account.trim().toLowerCase()}`];
  }

  /** Counts an attempt, or refuses it (uncounted) when the address or the account is over the limit. */
  async begin(ip: string, account: string): Promise<void> {
    if (this.limit === 0) return;
    const keys = this.keys(ip, account);
    const counts = [];
    for (const key of keys) counts.push(await this.store.increment(key, WINDOW_MS));
    const over = counts.filter((window) => window.count > this.limit);
    if (over.length === 0) return;
    for (const key of keys) await this.store.decrement(key);
    throw new TooManyRequestsError(Math.max(...over.map((window) => window.resetInMs)) / 1000);
  }

  /** A successful attempt is no failure: the address gets its count back, the account starts afresh. */
  async succeeded(ip: string, account: string): Promise<void> {
    if (this.limit === 0) return;
    const [ipKey, accountKey] = this.keys(ip, account);
    await this.store.decrement(ipKey);
    await this.store.reset(accountKey);
  }
}
