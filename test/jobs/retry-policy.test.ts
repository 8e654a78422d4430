import { describe, expect, it } from 'vitest';
import { afterFailure, backoffMs, nextTryAt, retryPolicy } from '../../src/jobs/retry-policy.ts';

describe('backoffMs', () => {
  it('doubles from 2 s up to 60 s', () => {
    const top = retryPolicy({ random: () => 1 });
    expect(Array.from({ length: 8 }, (_, n) => backoffMs(top, n))).toEqual([
      2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
    expect(backoffMs(top, 1000)).toBe(60_000);
  });

  it('draws each wait between half and all of its nominal length', () => {
    const low = retryPolicy({ random: () => 0 });
    const mid = retryPolicy({ random: () => 0.5 });
    expect(Array.from({ length: 7 }, (_, n) => backoffMs(low, n))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000,
    ]);
    expect(backoffMs(mid, 2)).toBe(6000);
    // Workers that failed together come back spread out.
    const draws = [0.1, 0.9, 0.4, 0.7];
    const spread = draws.map((r) => backoffMs(retryPolicy({ random: () => r }), 3));
    expect(new Set(spread).size).toBe(draws.length);
    for (const wait of spread) {
      expect(wait).toBeGreaterThanOrEqual(8000);
      expect(wait).toBeLessThanOrEqual(16_000);
    }
  });
});

describe('nextTryAt', () => {
  const policy = retryPolicy({ windowMs: 60_000, random: () => 1 });

  it('tries again after the backoff while the window lasts', () => {
    expect(nextTryAt(policy, 0, 0, 0)).toBe(2000);
    expect(nextTryAt(policy, 0, 2000, 1)).toBe(6000);
    expect(nextTryAt(policy, 0, 30_000, 4)).toBe(60_000); // the last try falls at the window's end
  });

  it('gives up once the window has run out, and at once with a window of 0', () => {
    expect(nextTryAt(policy, 0, 60_000, 5)).toBeNull();
    expect(nextTryAt(retryPolicy({ windowMs: 0 }), 5000, 5000, 0)).toBeNull();
  });
});

describe('afterFailure', () => {
  const policy = retryPolicy({ windowMs: 10 * 60_000, random: () => 1 });
  const job = { attempts: 1, max_attempts: 3, unreachable_retries: 0, unreachable_at: null };
  const unreachable = { kind: 'unreachable', what: 'store', cause: 'ECONNRESET' } as const;
  const other = { kind: 'other', reason: 'an internal error occurred' } as const;

  it('retries an unreachable store from its first such failure, then fails naming it', () => {
    expect(afterFailure(policy, job, unreachable, 5000)).toEqual({
      retry: true,
      atMs: 7000,
      reason: 'the backup store could not be reached (ECONNRESET); the job will be tried again',
      unreachableSinceMs: 5000,
    });
    const later = {
      ...job,
      attempts: 12,
      unreachable_retries: 11,
      unreachable_at: new Date(5000).toISOString(),
    };
    expect(afterFailure(policy, later, unreachable, 5000 + 10 * 60_000)).toEqual({
      retry: false,
      reason: 'the backup store was unreachable for 10 minutes (ECONNRESET)',
    });
  });

  it('retries other failures up to the attempts, not counting unreachable tries', () => {
    expect(afterFailure(policy, job, other, 0)).toMatchObject({ retry: true, atMs: 2000 });
    expect(afterFailure(policy, { ...job, attempts: 5, unreachable_retries: 3 }, other, 0)).toMatchObject({
      retry: true,
      atMs: 4000,
    });
    expect(afterFailure(policy, { ...job, attempts: 3 }, other, 0)).toEqual({
      retry: false,
      reason: other.reason,
    });
    expect(afterFailure(policy, job, { kind: 'permanent', reason: 'damaged' }, 0)).toEqual({
      retry: false,
      reason: 'damaged',
    });
  });
});
