import { describe, expect, it } from 'vitest';
import { MemoryCounterStore } from '../../src/shared/counter-store.ts';
import { TooManyRequestsError } from '../../src/shared/errors.ts';
import { LoginThrottle, throttledAddress, type LoginLimits } from '../../src/auth/login-throttle.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function setUp(limits: LoginLimits = { perAddress: 3, perAccount: 8 }) {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const throttle = new LoginThrottle(new MemoryCounterStore(() => now), limits);
  /** A failed attempt: counted, then the password turns out wrong. */
  const fail = (ip: string, account = 'user:a') => throttle.begin(ip, account);
  const succeed = async (ip: string, account = 'user:a') => {
    await throttle.begin(ip, account);
    await throttle.succeeded(ip, account);
  };
  const advance = (ms: number) => (now += ms);
  return { throttle, fail, succeed, advance };
}

async function refusal(attempt: Promise<void>): Promise<number> {
  const error = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TooManyRequestsError);
  return Number((error as TooManyRequestsError).headers['retry-after']);
}

describe('throttledAddress', () => {
  it('keeps IPv4 as is, unmaps IPv4-mapped IPv6, and groups IPv6 by /64', () => {
    expect(throttledAddress('10.0.0.1')).toBe('10.0.0.1');
    expect(throttledAddress('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(throttledAddress('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(throttledAddress('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(throttledAddress('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(throttledAddress('unknown')).toBe('unknown');
  });
});

describe('LoginThrottle', () => {
  it('refuses an address past its limit until its 15 minutes end, for every account', async () => {
    const { fail, advance } = setUp();
    for (let i = 0; i < 3; i++) await fail('10.0.0.1', `user:${i}`);
    advance(5 * MINUTE);
    expect(await refusal(fail('10.0.0.1', 'user:other'))).toBe(10 * 60);
    await fail('10.0.0.2', 'user:0');
    advance(10 * MINUTE);
    await fail('10.0.0.1', 'user:0');
  });

  it('refuses unknown addresses once the account ceiling is reached, until its hour ends', async () => {
    const { fail, advance } = setUp();
    for (let i = 0; i < 8; i++) await fail(`10.0.1.${i}`);
    advance(20 * MINUTE);
    expect(await refusal(fail('10.0.2.1'))).toBe(40 * 60);
    // Refused attempts are not counted: the address is untouched for other accounts.
    for (let i = 0; i < 3; i++) await fail('10.0.2.1', 'user:b');
    advance(40 * MINUTE);
    await fail('10.0.2.2');
  });

  it('lets an address known to the account past the ceiling, but not past its own limit', async () => {
    const { fail, succeed, advance } = setUp();
    await succeed('10.0.0.9');
    for (let i = 0; i < 8; i++) await fail(`10.0.1.${i}`);
    await succeed('10.0.0.9');
    for (let i = 0; i < 3; i++) await fail('10.0.0.9');
    await refusal(fail('10.0.0.9'));
    // Known only to this account, and only this address.
    await refusal(fail('10.0.0.8'));
    for (let i = 0; i < 8; i++) await fail(`10.0.3.${i}`, 'user:b');
    await refusal(fail('10.0.0.8', 'user:b'));
    advance(16 * MINUTE);
    await refusal(fail('10.0.0.9', 'user:b'));
    await succeed('10.0.0.9');
  });

  it('forgets a known address 30 days after its last successful login', async () => {
    const { fail, succeed, advance } = setUp({ perAddress: 3, perAccount: 1 });
    await succeed('10.0.0.9');
    advance(20 * DAY);
    await succeed('10.0.0.9');
    advance(20 * DAY);
    await fail('10.0.1.1');
    await succeed('10.0.0.9');
    advance(31 * DAY);
    await fail('10.0.1.1');
    await refusal(fail('10.0.0.9'));
  });

  it('gives back only its own counts on success', async () => {
    const { fail, succeed } = setUp({ perAddress: 3, perAccount: 4 });
    for (let i = 0; i < 2; i++) await fail('10.0.0.1');
    await succeed('10.0.0.2');
    // 10.0.0.1 keeps its two failures; the account keeps them too.
    await fail('10.0.0.1');
    await refusal(fail('10.0.0.1', 'user:b'));
    await fail('10.0.0.3');
    await refusal(fail('10.0.0.4'));
  });

  it('counts an IPv6 /64 as one address', async () => {
    const { fail } = setUp();
    for (let i = 1; i <= 3; i++) await fail(`2001:db8::${i}`, `user:${i}`);
    await refusal(fail('2001:db8::ffff:1', 'user:9'));
    await fail('2001:db8:0:1::1', 'user:9');
  });

  it('keeps nothing for an attempt refused by its address, whatever name it tries', async () => {
    const store = new MemoryCounterStore();
    const throttle = new LoginThrottle(store, { perAddress: 3, perAccount: 8 });
    for (let i = 0; i < 3; i++) await throttle.begin('10.0.0.1', `login:${i}`);
    const held = store.size;
    for (let i = 0; i < 1000; i++) await refusal(throttle.begin('10.0.0.1', `login:${'x'.repeat(191)}${i}`));
    expect(store.size).toBe(held);
    expect((await store.peek('login:ip:10.0.0.1')).count).toBe(3);
  });

  it('says the longer wait when the address and the account ceiling both refuse', async () => {
    const { fail, advance } = setUp({ perAddress: 3, perAccount: 3 });
    for (let i = 0; i < 3; i++) await fail(`10.0.1.${i}`);
    advance(30 * MINUTE);
    for (let i = 0; i < 3; i++) await fail('10.0.2.1', `user:${i + 10}`);
    expect(await refusal(fail('10.0.2.1'))).toBe(30 * 60);
  });

  it('counts an attempt without an account against its address alone', async () => {
    const store = new MemoryCounterStore();
    const throttle = new LoginThrottle(store, { perAddress: 3, perAccount: 1 });
    for (let i = 0; i < 3; i++) await throttle.begin(`10.0.0.${i}`, null);
    expect(store.size).toBe(3);
    for (let i = 0; i < 3; i++) await throttle.begin('10.0.0.9', null);
    await refusal(throttle.begin('10.0.0.9', null));
    await throttle.succeeded('10.0.0.1', null);
    expect(store.size).toBe(4);
  });

  it('is off with a per-address limit of 0, and the ceiling alone is off with a per-account limit of 0', async () => {
    const off = setUp({ perAddress: 0, perAccount: 1 });
    for (let i = 0; i < 50; i++) await off.fail('10.0.0.1');
    const noCeiling = setUp({ perAddress: 3, perAccount: 0 });
    for (let i = 0; i < 50; i++) for (let j = 0; j < 3; j++) await noCeiling.fail(`10.1.0.${i}`);
    await refusal(noCeiling.fail('10.1.0.0'));
  });
});
