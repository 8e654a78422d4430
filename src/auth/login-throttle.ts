import ipaddr from 'ipaddr.js';
import type { CounterStore } from '../shared/counter-store.ts';
import { TooManyRequestsError } from '../shared/errors.ts';

const ADDRESS_WINDOW_MS = 15 * 60_000;
const ACCOUNT_WINDOW_MS = 60 * 60_000;
/** How long an address stays known to an account after a successful login from it. */
const KNOWN_ADDRESS_MS = 30 * 24 * 60 * 60_000;

export interface LoginLimits {
  /** Failed logins per address in 15 minutes, whatever the account; 0 turns the whole throttle off. */
  perAddress: number;
  /** Failed logins per account in an hour, from every address together; 0 turns this ceiling off. */
  perAccount: number;
}

/**
 * What an address counts as: an IPv4 address as itself, an IPv6 address by its /64 network
 * (the share one host or one site is routed, inside which an attacker may pick any address).
 */
export function throttledAddress(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.parse(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${v6.toString()}/64`).toString()}/64`;
}

/**
 * Counts failed logins, so that guessing is slow but nobody can lock an account's owner out.
 *
 * - Per address (`perAddress` in 15 minutes, over every account): one address guesses slowly,
 *   and a password sprayed over many accounts counts once per try. The owner, at their own
 *   address, never shares this count with an attacker elsewhere.
 * - Per account (`perAccount` in an hour, over every address): a ceiling for guesses spread
 *   over many addresses, set well above what one or a handful of addresses can reach. When it
 *   trips, it refuses only addresses that are not known to the account; an address is known
 *   for 30 days after a successful login from it.
 *
 * The account is a key the caller chooses: the account's id when it exists, else the name
 * tried; null for an attempt that names nothing worth a ceiling (an unknown confirmation
 * token), which counts against its address alone. Refused attempts are refused before the
 * password is checked and are not counted. An attempt takes its counts before the password is
 * checked and gives them back if it succeeds, so that concurrent attempts cannot all pass the
 * check before any failure is counted.
 *
 * An address over its limit is refused before anything is counted for the account it names:
 * a refused attempt leaves no state behind, so a flood of them under ever new names costs no
 * memory (nor Redis keys).
 */
export class LoginThrottle {
  constructor(
    private readonly store: CounterStore,
    private readonly limits: LoginLimits,
  ) {}

  private keys(ip: string, account: string | null) {
    const address = throttledAddress(ip);
    const name = account?.trim().toLowerCase();
    return {
      address: `login:ip:${address}`,
      // Nothing is counted for an account, nor known to it, without a ceiling to apply.
      account:
        name === undefined || !this.ceiling
          ? null
          : { count: `login:account-hour:${name}`, known: `login:known:${name}:${address}` },
    };
  }

  private get ceiling(): boolean {
    return this.limits.perAccount > 0;
  }

  /** Counts an attempt, or refuses it (uncounted) when it is over a limit that applies to it. */
  async begin(ip: string, account: string | null): Promise<void> {
    if (this.limits.perAddress === 0) return;
    const keys = this.keys(ip, account);
    const address = await this.store.increment(keys.address, ADDRESS_WINDOW_MS);
    if (address.count > this.limits.perAddress) {
      // Refused already: the account's count is only looked at (for the longer wait, if its
      // ceiling refuses this address too), never started.
      const waits = [address.resetInMs];
      if (keys.account !== null) {
        const total = await this.store.peek(keys.account.count);
        if (total.count >= this.limits.perAccount && !(await this.known(keys.account.known)))
          waits.push(total.resetInMs);
      }
      await this.store.decrement(keys.address);
      throw new TooManyRequestsError(Math.max(...waits) / 1000);
    }
    if (keys.account === null) return;
    const total = await this.store.increment(keys.account.count, ACCOUNT_WINDOW_MS);
    if (total.count <= this.limits.perAccount || (await this.known(keys.account.known))) return;
    await this.giveBack(keys);
    throw new TooManyRequestsError(total.resetInMs / 1000);
  }

  /**
   * A successful attempt is no failure: it gives back its own counts (and nothing of anyone
   * else's), and makes its address known to the account.
   */
  async succeeded(ip: string, account: string | null): Promise<void> {
    if (this.limits.perAddress === 0) return;
    const keys = this.keys(ip, account);
    await this.giveBack(keys);
    if (keys.account === null) return;
    // Starting the marker afresh renews it for another 30 days.
    await this.store.reset(keys.account.known);
    await this.store.increment(keys.account.known, KNOWN_ADDRESS_MS);
  }

  /**
   * An attempt whose password was right but that is not a whole login yet (the second factor is
   * still to come), or a password confirmed by a caller already logged in: it gives back its own
   * counts, and makes its address known to no one.
   */
  async passed(ip: string, account: string | null): Promise<void> {
    if (this.limits.perAddress === 0) return;
    await this.giveBack(this.keys(ip, account));
  }

  private async known(key: string): Promise<boolean> {
    return (await this.store.peek(key)).count > 0;
  }

  private async giveBack(keys: ReturnType<LoginThrottle['keys']>): Promise<void> {
    await Promise.all([
      this.store.decrement(keys.address),
      keys.account === null ? undefined : this.store.decrement(keys.account.count),
    ]);
  }
}
