/**
 * Floods that need no credential: logins refused with 429 under ever new names, unknown
 * two-factor confirmation tokens, and attempts spread over more addresses than the counters may
 * hold. None may make the process hold memory for what it refused; what it does count stays
 * within the counter store's ceiling. Heap figures are taken after full collections, so they
 * are what is held, not garbage waiting.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginThrottle } from '../../src/auth/login-throttle.ts';
import { collectGarbage } from '../../src/shared/collect-garbage.ts';
import { MemoryCounterStore } from '../../src/shared/counter-store.ts';
import { TooManyRequestsError } from '../../src/shared/errors.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const MiB = 1024 * 1024;

/** The heap in use once everything unreachable is collected. */
function heldHeap(): number {
  for (let i = 0; i < 3; i++) collectGarbage('all');
  return process.memoryUsage().heapUsed;
}

/** A username as long as the reference panel allows (191 characters), never seen before. */
const uniqueName = (i: number) => `${i}-${randomBytes(96).toString('hex')}`.slice(0, 191);

/** Runs `attempt(i)` for i below `total`, `parallel` at a time; returns how many were refused with 429. */
async function flood(
  total: number,
  attempt: (i: number) => Promise<unknown>,
  parallel = 50,
): Promise<number> {
  let refused = 0;
  for (let i = 0; i < total; i += parallel) {
    await Promise.all(
      Array.from({ length: Math.min(parallel, total - i) }, (_, j) =>
        attempt(i + j).then(
          () => undefined,
          (error: unknown) => {
            if (!(error instanceof TooManyRequestsError)) throw error;
            refused += 1;
          },
        ),
      ),
    );
  }
  return refused;
}

describe('refused attempts hold no memory', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '3' } });
  });
  afterAll(async () => app.close());

  const context = (ip: string) => ({ batch: 'flood', ip, userAgent: 'flood' });

  it(
    'leaves the heap within 8 MiB after 200,000 logins refused under unique 191-character names',
    { timeout: 300_000 },
    async () => {
      const attacker = '10.66.0.1';
      // Through HTTP first: three wrong passwords, then nothing but 429 (and never a 500).
      for (let i = 0; i < 2000; i++) {
        const res = await app.http.inject({
          method: 'POST',
          url: '/auth/login',
          payload: { user: uniqueName(i), password: 'guess' },
          remoteAddress: attacker,
        });
        expect(res.statusCode, res.body).toBe(i < 3 ? 400 : 429);
      }
      // Then the login service the route calls, for speed: the same lookup and throttle.
      const before = heldHeap();
      const refused = await flood(200_000, (i) =>
        app.services.sessions.login(context(attacker), { user: uniqueName(i + 2000), password: 'guess' }),
      );
      const grown = heldHeap() - before;
      expect(refused).toBe(200_000);
      // Before refused attempts stopped starting account counters: about 330 bytes each, 63 MiB.
      // Under 1 MiB on SQLite and PostgreSQL; 4.7 MiB once on MariaDB in CI, whose driver keeps
      // caches of its own that fill to a ceiling.
      expect(grown / MiB).toBeLessThan(8);
    },
  );

  it(
    'leaves the heap within 4 MiB after 100,000 unknown confirmation tokens',
    { timeout: 300_000 },
    async () => {
      const attacker = '10.66.0.2';
      const checkpoint = (i: number) =>
        app.services.sessions.checkpoint(context(attacker), {
          confirmation_token: `${i}-${randomBytes(40).toString('hex')}`.slice(0, 64),
          authentication_code: '123456',
        });
      // Counted against the address alone: three "expired" answers, then 429.
      for (let i = 0; i < 3; i++) await expect(checkpoint(i)).rejects.toThrow(/expired/);
      await flood(2000, checkpoint);
      const before = heldHeap();
      expect(await flood(100_000, checkpoint)).toBe(100_000);
      const grown = heldHeap() - before;
      // Before unknown tokens stopped being counted as accounts of their own: 25 MiB.
      expect(grown / MiB).toBeLessThan(4);
    },
  );
});

describe('counted attempts from more addresses than the counters hold', () => {
  it(
    'hold at most the store ceiling: 150,000 addresses, one guess each, under unique names',
    { timeout: 120_000 },
    async () => {
      const store = new MemoryCounterStore(Date.now, { maxKeys: 100_000 });
      const throttle = new LoginThrottle(store, { perAddress: 10, perAccount: 300 });
      const before = heldHeap();
      const refused = await flood(150_000, (i) =>
        throttle.begin(
          `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`,
          `login:${uniqueName(i)}`,
        ),
      );
      const grown = heldHeap() - before;
      expect(refused).toBe(0);
      // Two counters an attempt (its address, the name it tried), 300,000 in all: at most the
      // 100,000 most recent are kept, at about 210 bytes each.
      expect(store.size).toBeLessThanOrEqual(100_000);
      expect(store.evicted).toBe(300_000 - store.size);
      expect(grown / MiB).toBeLessThan(28);
      await store.close();
    },
  );
});
